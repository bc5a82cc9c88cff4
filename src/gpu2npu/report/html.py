"""``report.html``: one self-contained page per migration, next to the CSV reports. Readiness at a
glance, charts (inline SVG), a table of findings (sortable with JavaScript, complete without), and a
side-by-side diff of each changed file with the rule and its tip on each change.

The tables are pandas group-bys over the rows the CSV files hold; the page is a Jinja2 template
with autoescaping, so text from the user's code is shown as text. Nothing is fetched: no host,
no CDN, no font. The page holds no time or path of this machine, so the output tree stays
reproducible."""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Dict, List, Optional, Tuple

from gpu2npu import __version__
from gpu2npu.errors import shown

HTML_FILE = "report.html"
TEMPLATES = Path(__file__).resolve().parent / "templates"
CONTEXT_LINES = 3
OPEN_DIFFS = 50  # more changed files than this: their diffs start closed, so a large page opens fast
# A finding's severity by its category, as check ranks them (gpu2npu.commands.check.findings)
SEVERITY = {
    "unsupported": "error",
    "cuda-op": "error",
    "limited": "warning",
    "supported_with_limits": "warning",
    "unknown": "warning",
    "not migrated": "warning",
    "mention": "note",
}
SEVERITIES = ("error", "warning", "note")
# How to open the page in headless Chromium as root on a machine without network, quietly (no
# background requests): the browser tests and benchmarks/report_html.py.
HEADLESS_CHROMIUM = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
TOP = 15  # bars per chart
BAR_WIDTH = 300.0  # the longest bar, in SVG units (labels take 230 before it)


class DiffRow:
    """One row of a side-by-side diff (slots: a large repository's page has some 100,000)."""

    __slots__ = ("kind", "old_number", "old_text", "new_number", "new_text", "notes")

    def __init__(
        self,
        kind: str,  # "same", "old", "new", "both" (changed on both sides), "gap"
        old_number: Optional[int] = None,
        old_text: str = "",
        new_number: Optional[int] = None,
        new_text: str = "",
    ):
        self.kind, self.old_number, self.old_text = kind, old_number, old_text
        self.new_number, self.new_text = new_number, new_text
        self.notes: List[Tuple[str, str, str]] = []  # (rule, message, tip)


@dataclass
class FileDiff:
    rel: str
    anchor: str
    added: int
    removed: int
    rows: List[DiffRow]


def page_input(run, directory: Path, data: dict) -> dict:
    """What the page is made from, as plain JSON values (it may be rendered in another process,
    ``gpu2npu.report.html_process``): the reports ``data`` (report.json's content), the changed
    files and the notes of their changes; the diffs are read from the input tree and the output
    tree (``directory``'s parent) when the page is rendered."""
    return {
        "data": data,
        "input_root": str(run.plan.root),
        "output_root": str(directory.parent),
        "changed": sorted(result.rel for result in run.all_results if result.changed),
        "notes": _change_notes(run),
        "target": run.options.target,
        "mode": run.options.style,
    }


def write_html(directory: Path, page: dict) -> None:
    """``directory``/report.html from a ``page_input``."""
    import jinja2

    diffs = file_diffs(page)
    rendered = page_data(page, diffs)
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # Written as it is rendered, some thousand pieces at a time: a page of a large repository
    # never sits in memory whole.
    pieces = environment.get_template("report.html.j2").generate(**rendered)
    with (directory / HTML_FILE).open("w", encoding="utf-8") as out:
        while True:
            batch = list(itertools.islice(pieces, 4096))
            if not batch:
                break
            out.write(shown("".join(batch)))  # file names' odd bytes escaped


# -- the diffs ------------------------------------------------------------------------------------


def file_diffs(page: dict) -> List[FileDiff]:
    input_root, output_root = Path(page["input_root"]), Path(page["output_root"])
    diffs = []
    for number, rel in enumerate(page["changed"]):
        old = _text_lines((input_root / rel).read_bytes())
        new = _text_lines((output_root / rel).read_bytes())
        notes = {
            int(line): [tuple(note) for note in notes] for line, notes in page["notes"].get(rel, {}).items()
        }
        diffs.append(side_by_side(rel, f"file-{number}", old, new, notes))
    return diffs


def _text_lines(data: bytes) -> List[str]:
    return data.decode("utf-8", "replace").split("\n")


def _change_notes(run) -> Dict[str, Dict[str, List[Tuple[str, str, str]]]]:
    """Per file, per original line (a string: JSON's keys are): (rule, message, tip) of the
    changes starting there."""
    notes: Dict[str, Dict[str, list]] = {}
    for result in run.all_results:
        for change in result.changes:
            rule = run.index.rules_by_id.get(change.rule)
            tip = (rule.get("tip") or rule.get("note") or "") if rule is not None else ""
            line_notes = notes.setdefault(result.rel, {}).setdefault(str(change.start_line), [])
            line_notes.append((change.rule, change.message, tip))
    return notes


def side_by_side(rel: str, anchor: str, old: List[str], new: List[str], notes) -> FileDiff:
    """The changed hunks of a file with CONTEXT_LINES around them, old and new side by side; the
    notes of a change go on the row of its first original line."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=True)
    rows: List[DiffRow] = []
    added = removed = 0
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        if rows:
            rows.append(DiffRow("gap"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [
                    DiffRow("same", i + 1, old[i], j + 1, new[j])
                    for i, j in zip(range(i1, i2), range(j1, j2))
                ]
                continue
            removed, added = removed + (i2 - i1), added + (j2 - j1)
            for offset in range(max(i2 - i1, j2 - j1)):
                i, j = i1 + offset, j1 + offset
                row = DiffRow("both" if i < i2 and j < j2 else "old" if i < i2 else "new")
                if i < i2:
                    row.old_number, row.old_text = i + 1, old[i]
                if j < j2:
                    row.new_number, row.new_text = j + 1, new[j]
                rows.append(row)
    for row in rows:
        if row.kind != "same" and row.old_number in notes:
            row.notes = notes.pop(row.old_number)
    _attach_after(rows, notes)
    return FileDiff(rel, anchor, added, removed, rows)


def _attach_after(rows: List[DiffRow], notes) -> None:
    """The notes of changes whose line shows no old text (lines inserted after it) go on the
    first changed row after that line."""
    for line in sorted(notes):
        seen = 0
        for row in rows:
            seen = max(seen, row.old_number or 0)
            if row.kind in ("new", "both", "old") and seen >= line:
                row.notes += notes[line]
                break
        else:
            changed = [row for row in rows if row.kind in ("new", "both", "old")]
            if changed:
                changed[-1].notes += notes[line]


# -- the page's data (pandas) -----------------------------------------------------------------------


def findings_frame(data: dict):
    """Every row a user must look at, from the reports: unsupported and unknown APIs, CUDA
    operators, manual work, files not migrated."""
    import pandas as pd

    rows = []
    for row in data.get("unsupported_api", []) + data.get("unknown_api", []):
        rows.append(
            (row["Status"], row["File"], row["Start Line"], row["OP"], row.get("Source", ""), row["Tips"])
        )
    for row in data.get("cuda_op_list", []):
        tip = "a CUDA operator or extension: port it to the NPU (an NPU kernel, or torch code)"
        rows.append(("cuda-op", row["File"], 0, row["Api"], "", tip))
    for row in data.get("manual_work", []):
        rows.append(
            (row["Category"], row["File"], row["Start Line"], row["Subject"], row["Rule"], row["Tips"])
        )
    for row in data.get("skipped", []):
        rows.append(("not migrated", row["File"], 0, row["File Kind"] or "file", "", row["Reason"]))
    frame = pd.DataFrame(rows, columns=["category", "file", "line", "subject", "rule", "tip"])
    frame["severity"] = frame["category"].map(SEVERITY).fillna("warning")
    frame["folder"] = frame["file"].map(_folder)
    frame["rank"] = frame["severity"].map({s: n for n, s in enumerate(SEVERITIES)})
    return frame.sort_values(["rank", "file", "line", "subject"], kind="stable").reset_index(drop=True)


def _folder(rel: str) -> str:
    parent = str(PurePosixPath(rel).parent)
    return "(top)" if parent == "." else parent


def page_data(page: dict, diffs: List[FileDiff]) -> dict:
    import pandas as pd

    data = page["data"]
    findings = findings_frame(data)
    anchors = {diff.rel: diff.anchor for diff in diffs}
    by_severity = findings.groupby("severity").size().reindex(list(SEVERITIES), fill_value=0)
    api_rows = findings[
        findings["category"].isin(["unsupported", "unknown", "supported_with_limits", "cuda-op"])
    ]
    by_folder = (
        api_rows.pivot_table(index="folder", columns="category", values="file", aggfunc="count", fill_value=0)
        if len(api_rows)
        else pd.DataFrame()
    )
    if len(by_folder):
        by_folder = (
            by_folder.assign(total=by_folder.sum(axis=1)).sort_values(["total"], ascending=False).head(TOP)
        )
    changes = pd.DataFrame(data["changes"], columns=["File", "Rule"]) if data["changes"] else pd.DataFrame()
    by_rule = changes.groupby("Rule").size().sort_values(ascending=False).head(TOP) if len(changes) else None
    summary = data["summary"]
    return {
        "version": __version__,
        "input": data["input"],
        "output": data["output"],
        "torch": data["torch_version"],
        "target": page["target"],
        "mode": page["mode"],
        "cards": _cards(summary, diffs, by_severity, data),
        "verdicts": _bars(data["files_by_verdict"]),
        "by_folder": _folder_bars(by_folder),
        "by_rule": _bars(by_rule.to_dict() if by_rule is not None else {}),
        "findings": [
            {**row, "anchor": anchors.get(row["file"], "")}
            for row in findings.drop(columns=["rank", "folder"]).to_dict("records")
        ],
        "by_severity": by_severity.to_dict(),
        "diffs": diffs,
        "open_diffs": len(diffs) <= OPEN_DIFFS,
        "optimizations": data.get("optimizations_by_rule"),  # None: a run without --optimize
    }


def _cards(summary: dict, diffs: List[FileDiff], by_severity, data: dict) -> List[Tuple[str, str, str]]:
    """(value, label, severity class) for the figures at the top."""
    files = summary["python_files"] + summary["other_kind_files"]
    return [
        (f"{len(diffs)} / {files}", "files changed", ""),
        (f"{sum(d.added for d in diffs)}", "lines changed", ""),
        (f"{summary['changes']}", "changes", ""),
        (
            f"{len([r for r in data.get('unsupported_api', []) if r['Status'] == 'unsupported'])}",
            "unsupported APIs",
            "error",
        ),
        (f"{len(data.get('unknown_api', []))}", "unknown APIs", "warning"),
        *(
            [(f"{len(data['optimizations'])}", "optimizations applied", "")]
            if "optimizations" in data
            else []
        ),
        (
            f"{int(by_severity['error'])} / {int(by_severity['warning'])} / {int(by_severity['note'])}",
            "errors / warnings / notes to look at",
            "warning" if by_severity["error"] == 0 else "error",
        ),
    ]


def _bars(counts: dict) -> List[Tuple[str, int, float]]:
    """(label, count, bar width in the chart's units) for a bar chart."""
    largest = max(counts.values(), default=0) or 1
    return [(str(label), int(count), BAR_WIDTH * count / largest) for label, count in counts.items()]


def _folder_bars(frame) -> List[Tuple[str, int, List[Tuple[str, int, float, float]]]]:
    """(folder, total, [(category, count, x, width)]) for a stacked bar per folder."""
    if not len(frame):
        return []
    largest = int(frame["total"].max()) or 1
    bars = []
    for folder, row in frame.iterrows():
        parts, x = [], 0.0
        for category in (c for c in frame.columns if c != "total" and row[c]):
            width = BAR_WIDTH * row[category] / largest
            parts.append((str(category), int(row[category]), x, width))
            x += width
        bars.append((str(folder), int(row["total"]), parts))
    return bars
