"""Reports of ``gpu2npu migrate``, written into ``transplant_result_file/``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

from gpu2npu import __version__
from gpu2npu.apis.judge import file_verdicts
from gpu2npu.errors import shown
from gpu2npu.report.api_reports import REPORT_COLUMNS, verdict_counts, write_api_reports
from gpu2npu.report.csvfile import write_csv
from gpu2npu.report.html import page_input, write_html

CHANGE_LIST = "change_list.csv"
# msFmkTransplt's five columns first; the file kind and a notebook's cell after ours.
CHANGE_COLUMNS = ("File", "Start Line", "End Line", "Operation Type", "Message", "Rule", "File Kind", "Cell")
SKIPPED_LIST = "skipped_files.csv"
SKIPPED_COLUMNS = ("File", "Reason", "File Kind")
MANUAL_WORK = "manual_work.csv"  # what the kinds other than Python found and left, with what to do
MANUAL_COLUMNS = (
    "File",
    "Start Line",
    "End Line",
    "Subject",
    "Tips",
    "Category",
    "Rule",
    "File Kind",
    "Cell",
)
DEPENDENCY_PLAN = "dependency_plan.csv"
DEPENDENCY_COLUMNS = (
    "Install Order",
    "Package",
    "Requirement",
    "File",
    "Line",
    "Status",
    "NPU Route",
    "Action",
    "Conflicts",
    "Source",
    "Rule",
)
# What --optimize changed, each change with its category, equivalence class and document; written
# only by runs with --optimize, so a plain run's output stays as it was.
OPTIMIZATIONS = "optimizations.csv"
OPTIMIZATION_COLUMNS = (
    "File",
    "Start Line",
    "End Line",
    "Rule",
    "Category",
    "Equivalence",
    "Change",
    "Document",
)
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
                    result.kind,
                    change.cell,
                )
            )
    return sorted(rows, key=lambda row: (row[0], row[1], row[2], row[5], row[4]))


def skipped_rows(results, notes) -> List[tuple]:
    rows = [(result.rel, result.skipped, result.kind) for result in results if result.skipped]
    rows += [(rel, what, "") for rel, what in notes]
    return sorted(rows)


def manual_rows(results) -> List[tuple]:
    """What the other file kinds found and left as it is, by file and line."""
    rows = [
        (r.rel, item.line, item.end_line, item.subject, item.tip, item.category, item.rule, r.kind, item.cell)
        for r in results
        for item in r.reported
    ]
    return sorted(rows, key=lambda row: (row[0], row[1], row[2], row[6], row[3]))


def dependency_rows(results) -> List[tuple]:
    """The dependency plan: every requirement a rule knows, in install order. A package no file
    writes (line 0: torch_npu where no list holds torch) is planned once, not once per file, for
    the file nearest the top of the tree."""
    rows = [
        (
            d.install_order,
            d.package,
            d.requirement,
            r.rel,
            d.line,
            d.status,
            d.npu_route,
            d.action,
            d.conflicts,
            d.source,
            d.rule,
        )
        for r in results
        for d in r.dependencies
    ]
    rows.sort(key=lambda row: (row[0], row[1], row[3], row[4]))
    written = {row[1] for row in rows if row[4]}
    unwritten = {}  # package -> its row of the top-most file (requirements.txt, not eval/...)
    for row in rows:
        if not row[4] and row[1] not in written:
            best = unwritten.get(row[1])
            if best is None or (row[3].count("/"), row[3]) < (best[3].count("/"), best[3]):
                unwritten[row[1]] = row
    return [row for row in rows if row[4] or unwritten.get(row[1]) is row]


def optimization_rows(run) -> List[tuple]:
    """The changes made by --optimize rules, with what each optimization is."""
    rows = []
    for result in run.all_results:
        for change in result.changes:
            optimization = run.index.optimization_of(change.rule)
            if optimization is not None:
                rows.append(
                    (
                        result.rel,
                        change.start_line,
                        change.end_line,
                        change.rule,
                        optimization.category,
                        optimization.equivalence,
                        change.message,
                        optimization.doc,
                    )
                )
    return sorted(rows, key=lambda row: (row[0], row[1], row[2], row[3], row[6]))


def optimizations_by_rule(run, rows: Optional[List[tuple]] = None) -> List[dict]:
    """Per --optimize rule of the run: how many changes it made and how many calls it kept
    (reported with its tip), with what it is. Rules that found nothing are left out. ``rows``:
    the run's ``optimization_rows``, where they are made already."""
    applied = Counter(row[3] for row in (optimization_rows(run) if rows is None else rows))
    kept = Counter(
        kept.rule_id
        for result in run.all_results
        for kept in result.kept
        if run.index.optimization_of(kept.rule_id) is not None
    )
    by_rule = []
    for rule_id in sorted(set(applied) | set(kept)):
        optimization = run.index.optimization_of(rule_id)
        by_rule.append(
            {
                "rule": rule_id,
                "category": optimization.category,
                "equivalence": optimization.equivalence,
                "applied": applied[rule_id],
                "kept": kept[rule_id],
                "what": run.describe_rule(rule_id),
                "doc": optimization.doc,
            }
        )
    return by_rule


def summary_counts(run) -> Dict[str, int]:
    python, other = run.results, run.other_results
    return {
        "python_files": len(python),
        "python_lines": sum(r.lines for r in python),
        "changed_files": sum(1 for r in python if r.changed),
        "unchanged_files": sum(1 for r in python if not r.changed and not r.skipped),
        "skipped_files": sum(1 for r in python if r.skipped),
        "other_kind_files": len(other),
        "other_kind_changed": sum(1 for r in other if r.changed),
        "other_kind_skipped": sum(1 for r in other if r.skipped),
        "other_files_copied": run.copied,
        "links": run.links,
        "notes": len(run.plan.notes),
        "changes": sum(len(r.changes) for r in run.all_results),
        "manual_work": sum(len(r.reported) for r in run.all_results),
    }


def kind_counts(run) -> Dict[str, Dict[str, int]]:
    """Per file kind: files read, changed, changes made, manual work rows, files skipped."""
    counts: Dict[str, Dict[str, int]] = {}
    for result in run.all_results:
        row = counts.setdefault(
            result.kind, {"files": 0, "changed": 0, "changes": 0, "manual_work": 0, "skipped": 0}
        )
        row["files"] += 1
        row["changed"] += int(result.changed)
        row["changes"] += len(result.changes)
        row["manual_work"] += len(result.reported)
        row["skipped"] += int(bool(result.skipped))
    return dict(sorted(counts.items()))


def changes_by_rule(results) -> Dict[str, int]:
    counter = Counter(change.rule for result in results for change in result.changes)
    return dict(sorted(counter.items()))


def write_reports(directory: Path, run, pages=None) -> None:
    """The reports of ``run`` in ``directory``; report.html by ``pages`` (a started
    ``html_process.PageProcess``) or in this process."""
    directory.mkdir(parents=True, exist_ok=True)
    results = run.all_results
    changes = change_rows(results)
    skipped = skipped_rows(results, run.plan.notes)
    manual, dependencies = manual_rows(run.all_results), dependency_rows(results)
    write_csv(directory / CHANGE_LIST, CHANGE_COLUMNS, changes)
    write_csv(directory / SKIPPED_LIST, SKIPPED_COLUMNS, skipped)
    write_csv(directory / MANUAL_WORK, MANUAL_COLUMNS, manual)
    write_csv(directory / DEPENDENCY_PLAN, DEPENDENCY_COLUMNS, dependencies)
    tables = write_api_reports(directory, run.apis)
    tables[MANUAL_WORK], tables[DEPENDENCY_PLAN] = manual, dependencies
    if run.options.optimize:
        tables[OPTIMIZATIONS] = optimization_rows(run)
        write_csv(directory / OPTIMIZATIONS, OPTIMIZATION_COLUMNS, tables[OPTIMIZATIONS])
    data = report_json(run, changes, skipped, tables)
    (directory / JSON_FILE).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    page = page_input(run, directory, data)
    if pages is not None:
        pages.render(directory, page)
    else:
        write_html(directory, page)
    (directory / LOG_FILE).write_text(shown(log_text(run, changes, skipped, tables)), encoding="utf-8")


_COLUMNS = {
    **REPORT_COLUMNS,
    MANUAL_WORK: MANUAL_COLUMNS,
    DEPENDENCY_PLAN: DEPENDENCY_COLUMNS,
    OPTIMIZATIONS: OPTIMIZATION_COLUMNS,
}


def report_json(run, changes, skipped, tables) -> dict:
    verdicts = file_verdicts(run.code_results, run.apis)
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
        "files_by_kind": kind_counts(run),
        "changes_by_rule": changes_by_rule(run.all_results),
        "changes": [dict(zip(CHANGE_COLUMNS, row)) for row in changes],
        "skipped": [dict(zip(SKIPPED_COLUMNS, row)) for row in skipped],
        **{
            name[: -len(".csv")]: [dict(zip(_COLUMNS[name], row)) for row in rows]
            for name, rows in tables.items()
        },
        "files": [{**_file_entry(r), **verdicts[r.rel]} for r in run.code_results],
        "other_files": [_file_entry(r) for r in run.all_results if r.rel not in verdicts],
        **(
            {"optimizations_by_rule": optimizations_by_rule(run, tables[OPTIMIZATIONS])}
            if run.options.optimize
            else {}
        ),
    }


def _file_entry(result) -> dict:
    return {
        "file": result.rel,
        "kind": result.kind,
        "lines": result.lines,
        "changed": result.changed,
        "changes": len(result.changes),
        "manual_work": len(result.reported),
        "skipped": result.skipped,
    }


def log_text(run, changes, skipped, tables) -> str:
    """A readable account of the run (no timestamps, so the output tree is reproducible)."""
    lines = [
        f"gpu2npu {__version__} migrate: input {run.options.input.name}, torch {run.options.version}",
        f"rule files: {', '.join(Path(f).name for f in run.options.rule_files) or '(built-in only)'}",
    ]
    lines += [
        f"{row[0]}: line {row[1]} ~ {row[2]} Operation Type: {row[3]} Message: {row[4]} [{row[5]}]"
        + (f" ({row[7]})" if row[7] else "")
        for row in changes
    ]
    lines += [f"{rel}: skipped: {reason}" for rel, reason, _ in skipped]
    for name, rows in tables.items():
        lines += [f"{name}: " + ", ".join(str(value) for value in row) for row in rows]
    counts = summary_counts(run)
    lines.append("summary: " + ", ".join(f"{key}={value}" for key, value in counts.items()))
    return "\n".join(lines) + "\n"
