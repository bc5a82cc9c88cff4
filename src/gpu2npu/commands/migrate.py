"""``gpu2npu migrate``: the input tree rewritten into ``OUTPUT/<name>_msft/`` with its reports
(and with ``--patch FILE`` the same as one patch of the input tree), or, with ``--diff``, the
changes as a unified diff and nothing written."""

from __future__ import annotations

import shlex
import sys

from gpu2npu.errors import output_error
from gpu2npu.options import OutputOptions, ProjectOptions
from gpu2npu.project.output import AtomicTree, write_atomically
from gpu2npu.project.patch import tree_patch
from gpu2npu.project.paths import destination
from gpu2npu.project.plan import REPORT_DIR
from gpu2npu.project.service import ProjectRun, migrate_files, start_project
from gpu2npu.report.html_process import PageProcess
from gpu2npu.report.migration import write_reports
from gpu2npu.styles import style_named


def run_migration(options: ProjectOptions, output: OutputOptions, diff: bool = False) -> ProjectRun:
    style = style_named(options.style)
    target = destination(options.input, output, style.output_suffix, writes=not diff)
    if diff:
        run = start_project(options, target.name)
        migrate_files(run, None)
        return run
    with PageProcess() as pages:  # started first: it imports its libraries while this one works
        run = start_project(options, target.name)
        with AtomicTree.building(target, output.force) as tree:
            migrate_files(run, tree)
            if style.launcher:
                run.launcher = _write_launcher(tree, style, run)
            write_reports(tree.path(REPORT_DIR), run, pages)
            if output.patch is not None:  # written before the tree is put in place: both or neither
                try:
                    write_atomically(output.patch, _migration_patch(run, tree))
                except OSError as exc:
                    raise output_error(str(output.patch), exc) from exc
    return run


def _migration_patch(run: ProjectRun, tree: AtomicTree) -> bytes:
    """Every file the migration changed or added, as a patch of the input tree."""
    files = [
        (r.rel, (run.plan.root / r.rel).read_bytes(), tree.path(r.rel).read_bytes(), False)
        for r in sorted(run.all_results, key=lambda r: r.rel)
        if r.changed
    ]
    if run.launcher:
        launcher = tree.path(run.launcher)
        files.append((run.launcher, None, launcher.read_bytes(), True))
    return tree_patch(files)


def _write_launcher(tree: AtomicTree, style, run: ProjectRun) -> str:
    """The mode's launch script at the output root, unless the input has a file of that name."""
    path = tree.path(style.launcher_name)
    if path.exists() or path.is_symlink():
        return ""
    (main,) = run.scan.facts.entries
    how = style.launcher_header(run.distributes_itself)
    start, script = "", main
    if run.start_folder:
        folder, example = run.start_folder
        start = style.launcher_start.format(folder=shlex.quote(folder), path=repr(example))
        script = main[len(folder) + 1 :]
    text = style.launcher.format(main=shlex.quote(main), how=how, start=start, script=shlex.quote(script))
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return style.launcher_name


def print_diffs(run: ProjectRun, stream=sys.stdout) -> None:
    for result in run.all_results:
        if result.diff:
            stream.write(result.diff)
