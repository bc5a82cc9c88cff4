"""``analyse -m affinity_apis``: affinity_api_call.csv, the calls and the user-defined functions
and classes that have an NPU-affine replacement in the torch_npu of the target version.

Each Python file is read once and parsed once (stdlib ast, no jedi), in worker processes for
big trees (-j); a file that mentions none of the names an entry needs is not parsed at all,
since it cannot give a row. The matching is gpu2npu.modes.affinity_apis.match; the facts are
affinity.yaml beside it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from gpu2npu.modes import AnalyseRequest, ModeResult
from gpu2npu.modes.affinity_apis.match import (
    AffinityIndex,
    AffinityRow,
    ModuleScan,
    index_for_version,
    load_affinity,
    project_rows,
    scan_module,
)
from gpu2npu.options import ProjectOptions
from gpu2npu.project.output import AtomicTree
from gpu2npu.project.parallel import WORKER_DIED, run_jobs
from gpu2npu.project.plan import plan_input
from gpu2npu.report.csvfile import write_csv
from gpu2npu.source.modules import module_name, package_prefix
from gpu2npu.source.parse import parse_ast, unreadable_reason

REPORT = "affinity_api_call.csv"
COLUMNS = ["File", "Start Line", "End Line", "Api Type", "Api Call Name", "Affinity Api Name"]


def run(request: AnalyseRequest, tree: AtomicTree) -> ModeResult:
    index = index_for_version(load_affinity(), request.options.version)
    scans, skipped = scan_project(request.options, index)
    rows = project_rows(scans)
    write_csv(tree.path(REPORT), COLUMNS, [_fields(row) for row in rows])
    by_type = dict(sorted(Counter(row.api_type for row in rows).items()))
    return ModeResult(
        reports={REPORT: len(rows)},
        log=_log(rows, by_type),
        skipped=skipped,
        summary={"affinity_rows_by_type": by_type},
    )


@dataclass(frozen=True)
class FileScan:
    rel: str
    scan: Optional[ModuleScan] = None  # None: nothing to find, or not analysed
    skipped: str = ""  # why the file was not analysed


def scan_project(
    options: ProjectOptions, index: AffinityIndex
) -> Tuple[List[ModuleScan], List[Tuple[str, str]]]:
    """Pass 1 over every Python file (in worker processes for big trees, as a migration does):
    the scans in sorted file order, and the files not analysed with the reason."""
    plan = plan_input(options.input, options.selection)
    prefix = package_prefix(plan.root)
    jobs = [(e.rel, str(plan.root / e.rel)) for e in plan.python_largest_first()]
    results = run_jobs(
        scan_file, jobs, options.workers, options.progress, _initialise, (index, prefix), crashed=crashed
    )
    results.sort(key=lambda r: r.rel)
    return [r.scan for r in results if r.scan is not None], [(r.rel, r.skipped) for r in results if r.skipped]


_STATE: dict = {}  # what a worker process shares: the index and the package prefix


def _initialise(index: AffinityIndex, prefix: str) -> None:
    _STATE["index"], _STATE["prefix"] = index, prefix


def scan_file(job: Tuple[str, str]) -> FileScan:
    """One read and at most one parse of one file."""
    rel, path = job
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return FileScan(rel, skipped=f"cannot be read ({exc.strerror}); not analysed")
    index = _STATE["index"]
    if not index.may_match(data):
        return FileScan(rel)  # mentions no name an entry needs: cannot give a row
    module = parse_ast(data)
    if module is None:
        return FileScan(
            rel, skipped=f"{unreadable_reason(data) or 'cannot be parsed as Python 3'}; not analysed"
        )
    try:
        return FileScan(rel, scan_module(module, rel, *module_name(rel, _STATE["prefix"]), index))
    except (
        Exception
    ) as exc:  # one odd file (say, nesting deeper than the recursion limit) must not stop the run
        return FileScan(rel, skipped=f"internal error ({type(exc).__name__}: {exc}); not analysed")


def crashed(job: Tuple[str, str]) -> FileScan:
    """The result of a file whose worker process died on it."""
    return FileScan(job[0], skipped=f"{WORKER_DIED}; not analysed")


def _fields(row: AffinityRow) -> list:
    return [row.file, row.start_line, row.end_line, row.api_type, row.call_name, row.replacement]


def _log(rows: List[AffinityRow], by_type: dict) -> List[str]:
    per_file = Counter(row.file for row in rows)
    kinds = ", ".join(f"{kind} {count}" for kind, count in by_type.items()) or "none"
    return [f"{REPORT} rows by Api Type: {kinds}"] + [
        f"{name}: {n} affinity row(s)" for name, n in sorted(per_file.items())
    ]
