"""What an instrumented copy gains: the runtime package ``msft_dynamic_analysis`` (copied from
``runtime/``), the import that brings its detector in, and the files it reads and writes."""

from __future__ import annotations

from pathlib import Path

RUNTIME_PACKAGE = "msft_dynamic_analysis"
RUNTIME_FILES = ("__init__.py", "hook.py")
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime" / RUNTIME_PACKAGE
# Files whose instrumented copy gained a line (the import could not share an existing line):
# {relative path: number of the added line in the copy}; the runtime maps lines back with it.
ADDED_LINES_FILE = "added_lines.json"
REPORT_FILE = "msft_dynamic_shape_analysis_report.csv"
DETECTOR_IMPORT = f"from {RUNTIME_PACKAGE}.hook import DETECTOR"
