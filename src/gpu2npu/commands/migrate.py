"""``gpu2npu migrate``: the input tree rewritten into ``OUTPUT/<name>_msft/`` with its reports,
or, with ``--diff``, the changes as a unified diff and nothing written."""

from __future__ import annotations

import sys

from gpu2npu.options import OutputOptions, ProjectOptions
from gpu2npu.project.output import AtomicTree
from gpu2npu.project.paths import destination
from gpu2npu.project.plan import REPORT_DIR
from gpu2npu.project.service import MIGRATION_SUFFIX, ProjectRun, migrate_files, start_project
from gpu2npu.report.migration import write_reports


def run_migration(options: ProjectOptions, output: OutputOptions, diff: bool = False) -> ProjectRun:
    target = destination(options.input, output, MIGRATION_SUFFIX, writes=not diff)
    run = start_project(options, target.name)
    if diff:
        migrate_files(run, None)
        return run
    with AtomicTree.building(target, output.force) as tree:
        migrate_files(run, tree)
        write_reports(tree.path(REPORT_DIR), run)
    return run


def print_diffs(run: ProjectRun, stream=sys.stdout) -> None:
    for result in run.results:
        if result.diff:
            stream.write(result.diff)
