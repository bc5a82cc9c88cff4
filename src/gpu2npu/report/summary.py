"""The table printed at the end of a run."""

from __future__ import annotations

from prettytable import PrettyTable

from gpu2npu.apis.judge import file_verdicts
from gpu2npu.report.api_reports import report_rows, verdict_counts
from gpu2npu.report.migration import (
    DEPENDENCY_PLAN,
    MANUAL_WORK,
    changes_by_rule,
    dependency_rows,
    kind_counts,
    manual_rows,
    optimizations_by_rule,
    summary_counts,
)

SHOWN_BLOCKED_FILES = 10

ONLY_WITH_OTHER_KINDS = ("other_kind_changed", "other_kind_skipped", "manual_work")
LABELS = {
    "python_files": "Python files scanned",
    "python_lines": "Python lines scanned",
    "changed_files": "Python files changed",
    "unchanged_files": "Python files unchanged",
    "skipped_files": "Python files skipped (see skipped_files.csv)",
    "other_kind_files": "other files read (shell, configs, notebooks, text...)",
    "other_kind_changed": "other files changed",
    "other_kind_skipped": "other files unreadable as their kind (see skipped_files.csv)",
    "other_files_copied": "other files copied",
    "links": "symbolic links recreated",
    "notes": "paths noted (see skipped_files.csv)",
    "changes": "changes (see change_list.csv)",
    "manual_work": f"manual work outside the API reports (see {MANUAL_WORK})",
}


def summary_table(run) -> str:
    table = PrettyTable(["item", "count"])
    table.align["item"] = "l"
    table.align["count"] = "r"
    counts = summary_counts(run)
    for key, value in counts.items():
        if key not in ONLY_WITH_OTHER_KINDS or value or counts["other_kind_files"]:
            table.add_row([LABELS[key], value])
    text = table.get_string()
    if run.other_results:
        text += "\n" + _kinds_table(run)
    by_rule = changes_by_rule(run.all_results)
    if by_rule:
        rules = PrettyTable(["rule", "changes", "what"])
        rules.align["what"] = "l"
        rules.align["changes"] = "r"
        for rule_id, count in by_rule.items():
            rules.add_row([rule_id, count, run.describe_rule(rule_id)])
        text += "\n" + rules.get_string()
    if run.options.optimize:
        text += "\n" + _optimizations_table(run)
    if run.apis is not None:
        text += "\n" + _reports_table(run)
    text += _manual_work(run)
    skipped = [(r.rel, r.skipped) for r in run.all_results if r.skipped]
    if skipped:
        text += "\nskipped:\n" + "\n".join(f"  {rel}: {reason}" for rel, reason in skipped)
    return text


def _optimizations_table(run) -> str:
    """What --optimize did, per rule: changes made and calls kept (reported with a tip)."""
    rows = optimizations_by_rule(run)
    if not rows:
        return "optimizations: none of the chosen rules found code to change"
    table = PrettyTable(["optimization", "category", "class", "applied", "kept", "what"])
    table.align["what"] = "l"
    for row in rows:
        table.add_row([row[key] for key in ("rule", "category", "equivalence", "applied", "kept", "what")])
    return table.get_string()


def _kinds_table(run) -> str:
    table = PrettyTable(["file kind", "files", "changed", "changes", "manual work", "skipped"])
    table.align["file kind"] = "l"
    for kind, row in kind_counts(run).items():
        table.add_row([kind, *row.values()])
    return table.get_string()


def _manual_work(run) -> str:
    """The first rows of manual work in other files, and the dependency plan's steps."""
    text = ""
    manual = manual_rows(run.all_results)
    if manual:
        text += f"\nmanual work outside the API reports ({MANUAL_WORK} has them all):\n"
        text += "\n".join(
            f"  {row[0]}:{row[1]}: [{row[5]}] {row[3]}: {row[4]}" for row in manual[:SHOWN_BLOCKED_FILES]
        )
        if len(manual) > SHOWN_BLOCKED_FILES:
            text += f"\n  ... and {len(manual) - SHOWN_BLOCKED_FILES} more"
    steps = _plan_steps(dependency_rows(run.all_results))
    if steps:
        text += f"\ndependency plan, in install order ({DEPENDENCY_PLAN} has each file and line):\n"
        text += "\n".join(steps)
    return text


def _plan_steps(rows) -> list:
    """One line per package and what to do (the rows of several files said once)."""
    files: dict = {}
    for order, package, _, rel, _, status, _, action, *_ in rows:
        files.setdefault((order, package, status, action), set()).add(rel)
    return [
        f"  {order}. {package}: {status}: {action}" + (f" ({len(rels)} files)" if len(rels) > 1 else "")
        for (order, package, status, action), rels in sorted(files.items())
    ]


def _reports_table(run) -> str:
    """Rows per report (one per row, not per file) and files by verdict, with the first
    blocking API of the files that need manual work."""
    table = PrettyTable(["report", "rows"])
    table.align["report"] = "l"
    table.align["rows"] = "r"
    for name, rows in report_rows(run.apis).items():
        table.add_row([name, len(rows)])
    verdicts = file_verdicts(run.code_results, run.apis)
    for status, count in verdict_counts(verdicts).items():
        table.add_row([f"code files: {status}", count])
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
