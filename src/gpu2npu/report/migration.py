"""Reports of ``gpu2npu migrate``, written into ``transplant_result_file/``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Dict, List

from gpu2npu import __version__
from gpu2npu.apis.judge import file_verdicts
from gpu2npu.errors import shown
from gpu2npu.report.api_reports import REPORT_COLUMNS, verdict_counts, write_api_reports
from gpu2npu.report.csvfile import write_csv

CHANGE_LIST = "change_list.csv"
CHANGE_COLUMNS = ("File", "Start Line", "End Line", "Operation Type", "Message", "Rule")
SKIPPED_LIST = "skipped_files.csv"
SKIPPED_COLUMNS = ("File", "Reason")
LOG_FILE = "msFmkTranspltlog.txt"
JSON_FILE = "report.json"


def change_rows(results) -> List[tuple]:
    rows = []
    for result in results:
        for change in result.changes:
            rows.append(
                (
                    result.rel,
                    change.start_line,
                    change.end_line,
                    change.operation,
                    change.message,
                    change.rule,
                )
            )
    return sorted(rows, key=lambda row: (row[0], row[1], row[2], row[5], row[4]))


def skipped_rows(results, notes) -> List[tuple]:
    rows = [(result.rel, result.skipped) for result in results if result.skipped]
    rows += [(rel, what) for rel, what in notes]
    return sorted(rows)


def summary_counts(run) -> Dict[str, int]:
    python = run.results
    return {
        "python_files": len(python),
        "python_lines": sum(r.lines for r in python),
        "changed_files": sum(1 for r in python if r.changed),
        "unchanged_files": sum(1 for r in python if not r.changed and not r.skipped),
        "skipped_files": sum(1 for r in python if r.skipped),
        "other_files_copied": run.copied,
        "links": run.links,
        "notes": len(run.plan.notes),
        "changes": sum(len(r.changes) for r in python),
    }


def changes_by_rule(results) -> Dict[str, int]:
    counter = Counter(change.rule for result in results for change in result.changes)
    return dict(sorted(counter.items()))


def write_reports(directory: Path, run) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    changes = change_rows(run.results)
    skipped = skipped_rows(run.results, run.plan.notes)
    write_csv(directory / CHANGE_LIST, CHANGE_COLUMNS, changes)
    write_csv(directory / SKIPPED_LIST, SKIPPED_COLUMNS, skipped)
    tables = write_api_reports(directory, run.apis)
    (directory / JSON_FILE).write_text(
        json.dumps(report_json(run, changes, skipped, tables), indent=2) + "\n", encoding="utf-8"
    )
    (directory / LOG_FILE).write_text(shown(log_text(run, changes, skipped, tables)), encoding="utf-8")


def report_json(run, changes, skipped, tables) -> dict:
    verdicts = file_verdicts(run.results, run.apis)
    return {
        "tool": "gpu2npu",
        "tool_version": __version__,
        "command": "migrate",
        "torch_version": run.options.version,
        "input": run.options.input.name,
        "output": run.output_name,
        "rule_files": [Path(f).name for f in run.options.rule_files],
        "disabled_rules": sorted(run.options.disabled_rules),
        "summary": summary_counts(run),
        "report_rows": {name: len(rows) for name, rows in tables.items()},
        "files_by_verdict": verdict_counts(verdicts),
        "changes_by_rule": changes_by_rule(run.results),
        "changes": [dict(zip(CHANGE_COLUMNS, row)) for row in changes],
        "skipped": [dict(zip(SKIPPED_COLUMNS, row)) for row in skipped],
        **{
            name[: -len(".csv")]: [dict(zip(REPORT_COLUMNS[name], row)) for row in rows]
            for name, rows in tables.items()
        },
        "files": [
            {
                "file": r.rel,
                "lines": r.lines,
                "changed": r.changed,
                "changes": len(r.changes),
                "skipped": r.skipped,
                **verdicts[r.rel],
            }
            for r in run.results
        ],
    }


def log_text(run, changes, skipped, tables) -> str:
    """A readable account of the run (no timestamps, so the output tree is reproducible)."""
    lines = [
        f"gpu2npu {__version__} migrate: input {run.options.input.name}, torch {run.options.version}",
        f"rule files: {', '.join(Path(f).name for f in run.options.rule_files) or '(built-in only)'}",
    ]
    lines += [
        f"{row[0]}: line {row[1]} ~ {row[2]} Operation Type: {row[3]} Message: {row[4]} [{row[5]}]"
        for row in changes
    ]
    lines += [f"{rel}: skipped: {reason}" for rel, reason in skipped]
    for name, rows in tables.items():
        lines += [f"{name}: " + ", ".join(str(value) for value in row) for row in rows]
    counts = summary_counts(run)
    lines.append("summary: " + ", ".join(f"{key}={value}" for key, value in counts.items()))
    return "\n".join(lines) + "\n"
