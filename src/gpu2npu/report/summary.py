"""The table printed at the end of a run."""

from __future__ import annotations

from prettytable import PrettyTable

from gpu2npu.report.migration import changes_by_rule, summary_counts

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
    skipped = [(r.rel, r.skipped) for r in run.results if r.skipped]
    if skipped:
        text += "\nskipped:\n" + "\n".join(f"  {rel}: {reason}" for rel, reason in skipped)
    return text
