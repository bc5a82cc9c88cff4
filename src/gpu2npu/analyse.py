"""``gpu2npu analyse``: pre-migration analysis, written to ``OUTPUT/<name>_analysis/``.

Mode ``torch_apis``: the API reports of a migration (unsupported_api.csv, unknown_api.csv,
cuda_op_list.csv, api_precision_advice.csv, api_performance_advice.csv) without a migrated
tree, with msFmkTransplt's file names and leading columns, and a log pytorch_analysis.txt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from gpu2npu import __version__
from gpu2npu.analysis.api_files import load_api_files
from gpu2npu.migrate import analyse_only, check_paths
from gpu2npu.options import MigrateOptions
from gpu2npu.pipeline.output import AtomicTree
from gpu2npu.report.apis import file_verdicts
from gpu2npu.report.csvfile import write_csv
from gpu2npu.report.migration import REPORT_COLUMNS, report_rows, verdict_counts

ANALYSIS_SUFFIX = "_analysis"
LOG_FILE = "pytorch_analysis.txt"


def run_analysis(options: MigrateOptions, mode: str, api_files: Sequence[Path] = ()):
    destination = check_paths(options, ANALYSIS_SUFFIX)
    run = analyse_only(options, load_api_files(api_files))
    tree = AtomicTree(destination, replace=options.force)
    try:
        rows = report_rows(run)
        for name, table in rows.items():
            write_csv(tree.path(name), REPORT_COLUMNS[name], table)
        verdicts = file_verdicts(run.results, run.apis)
        summary = {
            "tool": "gpu2npu",
            "tool_version": __version__,
            "command": "analyse",
            "mode": mode,
            "torch_version": options.version,
            "input": options.input.name,
            "api_files": [Path(p).name for p in api_files],
            "report_rows": {name: len(table) for name, table in rows.items()},
            "files_by_verdict": verdict_counts(verdicts),
            "files": [{"file": rel, **verdict} for rel, verdict in sorted(verdicts.items())],
        }
        tree.path("report.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        tree.path(LOG_FILE).write_text(_log(summary, run), encoding="utf-8")
        tree.commit()
    except BaseException:
        tree.discard()
        raise
    return destination, summary


def _log(summary: dict, run) -> str:
    lines = [
        f"gpu2npu {__version__} analyse -m {summary['mode']}: input {summary['input']}, torch {summary['torch_version']}",
        f"-api files: {', '.join(summary['api_files']) or '(none)'}",
    ]
    lines += [f"{name}: {count} row(s)" for name, count in summary["report_rows"].items()]
    lines += [f"{r.rel}: skipped: {r.skipped}" for r in run.results if r.skipped]
    lines += [f"{rel}: {v['status']}" + (f", first blocking API {v['first_blocking_api']}" if v["first_blocking_api"] else "")
              for rel, v in ((f["file"], f) for f in summary["files"])]
    return "\n".join(lines) + "\n"
