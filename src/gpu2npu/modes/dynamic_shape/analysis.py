"""``analyse -m dynamic_shape``: an instrumented copy of the project, to be run for a few
batches; it reports the torch calls whose tensor shapes change from batch to batch.

``OUTPUT/<name>_analysis/`` receives the whole project -- Python files instrumented
(gpu2npu.modes.dynamic_shape.instrument), everything else byte for byte, links as links, files that cannot
be parsed unchanged -- and the runtime package ``msft_dynamic_analysis/``. Running the copy
with that directory on PYTHONPATH writes ``msft_dynamic_shape_analysis_report.csv`` there at
exit. No report is written now: the shapes exist only while the training runs.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from gpu2npu.errors import UserError
from gpu2npu.modes import LOG_FILE, SUMMARY_FILE, AnalyseRequest, ModeResult
from gpu2npu.modes.dynamic_shape.instrument import Instrumented, instrument_source
from gpu2npu.modes.dynamic_shape.loops import BY_HAND, BY_NAME, Loop
from gpu2npu.modes.dynamic_shape.runtime_package import (
    ADDED_LINES_FILE,
    REPORT_FILE,
    RUNTIME_DIR,
    RUNTIME_FILES,
    RUNTIME_PACKAGE,
)
from gpu2npu.project.output import AtomicTree, copy_file, copy_other_entries, make_directories, write_file
from gpu2npu.project.parallel import WORKER_DIED, run_jobs
from gpu2npu.project.plan import Plan, plan_input

RESERVED_NAMES = (RUNTIME_PACKAGE, LOG_FILE, SUMMARY_FILE)  # what the analysis adds to the copy's root
WRAP_BY_HAND = "for batch in DETECTOR.start(loader):"


@dataclass
class FileOutcome:
    rel: str
    changed: bool
    result: Instrumented


def run(request: AnalyseRequest, tree: AtomicTree) -> ModeResult:
    options = request.options
    plan = plan_input(options.input, options.selection)
    if options.input.is_dir():
        refuse_reserved_names(plan.root)
    make_directories(plan, tree)
    copy_other_entries(plan, tree, every_kind=True)
    outcomes = _instrument_python_files(plan, tree, options.workers, options.progress)
    _install_runtime(tree, {o.rel: o.result.added_line for o in outcomes if o.result.added_line})
    return _mode_result(plan, outcomes, tree.final, single_file=not options.input.is_dir())


def refuse_reserved_names(root: Path) -> None:
    for name in RESERVED_NAMES:
        entry = root / name
        if entry.exists() or entry.is_symlink():
            raise UserError(
                f"input '{root}' has an entry named '{name}', "
                "which the dynamic_shape analysis writes into its copy",
                "rename it, or analyse the original project rather than an instrumented copy",
            )


def _instrument_python_files(plan: Plan, tree: AtomicTree, workers: int, progress: bool) -> List[FileOutcome]:
    jobs = [(e.rel, str(plan.root / e.rel), str(tree.path(e.rel))) for e in plan.python_largest_first()]
    outcomes = run_jobs(instrument_file, jobs, workers, progress, crashed=crashed)
    return sorted(outcomes, key=lambda o: o.rel)


def instrument_file(job: Tuple[str, str, str]) -> FileOutcome:
    """Write the instrumented copy of one file (or the file itself); in a worker process."""
    rel, source, destination = job
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        return FileOutcome(rel, False, Instrumented(skipped=f"cannot be read ({exc.strerror}); not copied"))
    try:
        result = instrument_source(data, rel)
    except Exception as exc:  # one bad file must never stop the run
        result = Instrumented(skipped=f"internal error ({type(exc).__name__}: {exc}); copied unchanged")
    changed, new_bytes = result.new_bytes is not None, result.new_bytes
    result.new_bytes = None  # written here, not sent back
    write_file(Path(source), Path(destination), new_bytes)
    return FileOutcome(rel, changed, result)


def crashed(job: Tuple[str, str, str]) -> FileOutcome:
    """The outcome of a file whose worker process died on it: the file is copied unchanged."""
    rel, source, destination = job
    write_file(Path(source), Path(destination), None)
    return FileOutcome(rel, False, Instrumented(skipped=f"{WORKER_DIED}; copied unchanged"))


def _install_runtime(tree: AtomicTree, added_lines: dict) -> None:
    package = tree.path(RUNTIME_PACKAGE)
    package.mkdir()
    for name in RUNTIME_FILES:
        copy_file(RUNTIME_DIR / name, package / name)
    (package / ADDED_LINES_FILE).write_text(
        json.dumps(added_lines, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def _mode_result(plan: Plan, outcomes: List[FileOutcome], destination: Path, single_file: bool) -> ModeResult:
    log: List[str] = []
    wrapped: List[Tuple[str, Loop]] = []
    for outcome in outcomes:
        if outcome.result.skipped:
            continue  # the caller logs skipped files
        calls = outcome.result.calls
        log.append(
            f"{outcome.rel}: {calls} call(s) instrumented"
            if outcome.changed
            else f"{outcome.rel}: no call to instrument; copied unchanged"
        )
        for loop in outcome.result.loops:
            log.append(loop_log_line(outcome.rel, loop))
            wrapped.append((outcome.rel, loop))
    if not wrapped:
        log.append(f"no loop over a DataLoader found; wrap your training loop by hand: {WRAP_BY_HAND}")
    log += [f"{rel}: {note}" for rel, note in plan.notes]
    return ModeResult(
        reports={},
        log=log,
        skipped=[(o.rel, o.result.skipped) for o in outcomes if o.result.skipped],
        summary={
            "python_files": len(outcomes),
            "instrumented_files": sum(o.changed for o in outcomes),
            "instrumented_calls": sum(o.result.calls for o in outcomes),
            "wrapped_loops": [
                {"file": rel, "line": loop.line, "loop": loop.header, "found_by": loop.found_by}
                for rel, loop in wrapped
            ],
            "runtime_package": RUNTIME_PACKAGE,
            "shape_report": REPORT_FILE,
        },
        hints=_hints(outcomes, destination, single_file, bool(wrapped)),
    )


def loop_log_line(rel: str, loop: Loop) -> str:
    where = f"{rel}:{loop.line}"
    if loop.found_by == BY_HAND:
        return f"{where}: '{loop.header}' is wrapped in DETECTOR.start already"
    line = f"{where}: wrapped '{loop.header}' in DETECTOR.start"
    if loop.found_by == BY_NAME:
        line += f" (chosen by its name: this file assigns no DataLoader to '{loop.loader}')"
    return line


def _hints(outcomes: List[FileOutcome], destination: Path, single_file: bool, wrapped: bool) -> List[str]:
    script = _script_to_run(outcomes, single_file)
    to_run = shlex.quote(str(destination / script)) if script else "<your training script in the copy>"
    command = f"PYTHONPATH={shlex.quote(str(destination))} python {to_run}"
    hints = [] if wrapped else [f"no training loop was found: in the copy, wrap it by hand: {WRAP_BY_HAND}"]
    return hints + [
        f"run a few batches of the instrumented copy: {command}",
        f"at exit it writes {destination / REPORT_FILE} (only a header: no dynamic shapes)",
    ]


def _script_to_run(outcomes: List[FileOutcome], single_file: bool) -> Optional[str]:
    """The file run as a script (``if __name__ == "__main__"``), preferring one with a wrapped loop."""
    if single_file:
        return outcomes[0].rel if outcomes else None
    scripts = [o for o in outcomes if o.result.main_guard]
    with_loops = [o for o in scripts if o.result.loops]
    chosen = (with_loops or scripts or [None])[0]
    return chosen.rel if chosen else None
