"""The API reports, written by ``migrate`` into transplant_result_file/ and by
``analyse -m torch_apis``: msFmkTransplt's file names and leading columns (extra columns to the
right), and their rows from the judged API uses (gpu2npu.apis.judge)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Dict

from gpu2npu.apis.judge import ApiReports
from gpu2npu.report.csvfile import write_csv

UNSUPPORTED_API = "unsupported_api.csv"
UNKNOWN_API = "unknown_api.csv"
CUDA_OP_LIST = "cuda_op_list.csv"
PRECISION_ADVICE = "api_precision_advice.csv"
PERFORMANCE_ADVICE = "api_performance_advice.csv"
API_COLUMNS = ("File", "Start Line", "End Line", "OP", "Tips", "Status", "Confidence", "Source")
ADVICE_COLUMNS = ("File", "Start Line", "End Line", "OP", "Tips")
CUDA_OP_COLUMNS = ("File", "Api")
REPORT_COLUMNS = {
    UNSUPPORTED_API: API_COLUMNS,
    UNKNOWN_API: API_COLUMNS,
    CUDA_OP_LIST: CUDA_OP_COLUMNS,
    PRECISION_ADVICE: ADVICE_COLUMNS,
    PERFORMANCE_ADVICE: ADVICE_COLUMNS,
}
VERDICTS = ("fully migrated", "needs testing", "needs manual work", "not migrated")


def report_rows(apis: ApiReports) -> Dict[str, list]:
    """The rows of each API report file, by file name, in display order."""
    return {
        UNSUPPORTED_API: [row.as_tuple() for row in apis.unsupported],
        UNKNOWN_API: [row.as_tuple() for row in apis.unknown],
        CUDA_OP_LIST: list(apis.cuda_ops),
        PRECISION_ADVICE: apis.precision,
        PERFORMANCE_ADVICE: apis.performance,
    }


def write_api_reports(directory: Path, apis: ApiReports) -> Dict[str, list]:
    """Write the five files; returns their rows by file name."""
    tables = report_rows(apis)
    for name, rows in tables.items():
        write_csv(directory / name, REPORT_COLUMNS[name], rows)
    return tables


def verdict_counts(verdicts: Dict[str, dict]) -> Dict[str, int]:
    counter = Counter(v["status"] for v in verdicts.values())
    return {status: counter.get(status, 0) for status in VERDICTS}
