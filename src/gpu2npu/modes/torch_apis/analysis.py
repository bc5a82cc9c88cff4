"""``analyse -m torch_apis``: the API reports of a migration (unsupported_api.csv,
unknown_api.csv, cuda_op_list.csv, api_precision_advice.csv, api_performance_advice.csv)
without a migrated tree; -api files make calls into analysed libraries unsupported."""

from __future__ import annotations

from gpu2npu.apis.api_files import load_api_files
from gpu2npu.apis.judge import file_verdicts
from gpu2npu.modes import AnalyseRequest, ModeResult, not_analysed
from gpu2npu.project.output import AtomicTree
from gpu2npu.project.service import analyse_project
from gpu2npu.report.api_reports import verdict_counts, write_api_reports


def run(request: AnalyseRequest, tree: AtomicTree) -> ModeResult:
    run = analyse_project(request.options, load_api_files(request.api_files), rewrite=False)
    rows = write_api_reports(tree.temp, run.apis)
    verdicts = file_verdicts(run.results, run.apis)
    files = [{"file": rel, **verdict} for rel, verdict in sorted(verdicts.items())]
    log = [
        f"{entry['file']}: {entry['status']}"
        + (f", first blocking API {entry['first_blocking_api']}" if entry["first_blocking_api"] else "")
        for entry in files
    ]
    return ModeResult(
        reports={name: len(table) for name, table in rows.items()},
        log=log,
        skipped=not_analysed(run.results),
        summary={"files_by_verdict": verdict_counts(verdicts), "files": files},
    )
