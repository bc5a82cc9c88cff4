"""Fixture pairs of every file kind other than Python, run through the kind that claims them.

A case is a folder ``tests/fixtures_files/<kind>/<case>/`` holding ``before/<file>`` and, when
the migration changes it, ``after/<file>`` (no ``after``: the file must stay byte-identical).
Optional ``changes.csv`` (start, end, operation, message, rule) and ``reported.csv`` (line,
end line, subject, tip, rule, category, cell) are the exact rows. Each case also checks that a
second migration changes nothing.
"""

import csv
from pathlib import Path

import pytest
from helpers import migrate_file

from gpu2npu.filekinds import classify

ROOT = Path(__file__).resolve().parent / "fixtures_files"
CASES = sorted(path for path in ROOT.glob("*/*") if (path / "before").is_dir())


def _only_file(folder: Path) -> Path:
    (path,) = [p for p in folder.iterdir() if p.is_file()]
    return path


def _csv_rows(path: Path):
    with open(path, newline="", encoding="utf-8") as handle:
        return [tuple(row) for row in csv.reader(handle)][1:]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_file_kind_fixture(case):
    before = _only_file(case / "before")
    data = before.read_bytes()
    assert classify(before.name, len(data), lambda: data[:256]) == case.parent.name
    outcome = migrate_file(before.name, data)
    after = case / "after" / before.name
    expected = after.read_bytes() if after.exists() else None
    assert outcome.new_bytes == expected
    if (case / "changes.csv").exists():
        got = [(str(c.start_line), str(c.end_line), c.operation, c.message, c.rule) for c in outcome.changes]
        assert got == _csv_rows(case / "changes.csv")
    if (case / "reported.csv").exists():
        got = [
            (str(r.line), str(r.end_line), r.subject, r.tip, r.rule, r.category, r.cell)
            for r in outcome.reported
        ]
        assert got == _csv_rows(case / "reported.csv")
    if expected is not None:
        assert migrate_file(before.name, expected).new_bytes is None  # a second migration changes nothing
