"""The table printed at the end of a run."""

from __future__ import annotations

from prettytable import PrettyTable

from gpu2npu.apis.judge import file_verdicts
from gpu2npu.report.api_reports import report_rows, verdict_counts
from gpu2npu.report.migration import changes_by_rule, summary_counts

SHOWN_BLOCKED_FILES = 10

LABELS = {
    "python_files": "Python files scanned",
    "python_lines": "Python lines scanned",
    "changed_files": "Python files changed",
    "unchanged_files": "Python files unchanged",
    "skipped_files": "Python files skipped (see skipped_files.csv)",
    "other_files_copied": "other files copied",
    "links": "symbolic links recreated",
    "notes": "paths noted (see skipped_files.csv)",
    "changes": "changes (see change_list.csv)",
}


def summary_table(run) -> str:
    table = PrettyTable(["item", "count"])
    table.align["item"] = "l"
    table.align["count"] = "r"
    for key, value in summary_counts(run).items():
        table.add_row([LABELS[key], value])
    text = table.get_string()
    by_rule = changes_by_rule(run.results)
    if by_rule:
        rules = PrettyTable(["rule", "changes", "what"])
        rules.align["what"] = "l"
        rules.align["changes"] = "r"
        for rule_id, count in by_rule.items():
            rules.add_row([rule_id, count, run.describe_rule(rule_id)])
        text += "\n" + rules.get_string()
    if run.apis is not None:
        text += "\n" + _reports_table(run)
    skipped = [(r.rel, r.skipped) for r in run.results if r.skipped]
    if skipped:
        text += "\nskipped:\n" + "\n".join(f"  {rel}: {reason}" for rel, reason in skipped)
    return text


def _reports_table(run) -> str:
    """Rows per report (one per row, not per file) and files by verdict, with the first
    blocking API of the files that need manual work."""
    table = PrettyTable(["report", "rows"])
    table.align["report"] = "l"
    table.align["rows"] = "r"
    for name, rows in report_rows(run.apis).items():
        table.add_row([name, len(rows)])
    verdicts = file_verdicts(run.results, run.apis)
    for status, count in verdict_counts(verdicts).items():
        table.add_row([f"Python files {status}", count])
    text = table.get_string()
    blocked = [
        (rel, v["first_blocking_api"])
        for rel, v in sorted(verdicts.items())
        if v["status"] == "needs manual work"
    ]
    if blocked:
        text += "\nfirst blocking API per file (report.json has them all):\n"
        text += "\n".join(f"  {rel}: {api}" for rel, api in blocked[:SHOWN_BLOCKED_FILES])
        if len(blocked) > SHOWN_BLOCKED_FILES:
            text += f"\n  ... and {len(blocked) - SHOWN_BLOCKED_FILES} more"
    return text
