"""CSV writing shared by every report.

The stdlib writer with ``\\n`` line ends and minimal quoting gives the same bytes pandas'
``to_csv(index=False)`` gives, without pandas' import cost on every start of the CLI.
Values that a spreadsheet would run as a formula get a leading space, in every row.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable, Sequence

from gpu2npu.errors import shown

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")


def neutralise(value) -> str:
    text = "" if value is None else str(value)
    return " " + text if text.startswith(FORMULA_STARTS) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([neutralise(value) if isinstance(value, str) else value for value in row])
    return buffer.getvalue()


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence]) -> int:
    rows = list(rows)
    path.write_text(shown(csv_text(header, rows)), encoding="utf-8")
    return len(rows)
