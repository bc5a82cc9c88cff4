"""Findings: what a migration run found, as one flat list a CI gate can rank and filter."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import List

from gpu2npu.apis.judge import CUDA_OP
from gpu2npu.source.parse import reason_alone
from gpu2npu.targets import target_named

# Categories and their rank (least to most severe); --fail-on names the lowest failing rank.
RANK = {
    "mention": 0,
    "optimization": 0,
    "convertible": 1,
    "limited": 2,
    "unknown": 2,
    "unchecked": 2,
    "cuda-op": 3,
    "unsupported": 4,
}
FAIL_ON = {"any": 0, "convertible": 1, "unknown": 2, "cuda-op": 3, "unsupported": 4}
SEVERITY = {
    "mention": "note",  # CUDA named in a file no kind migrates (documentation, sources of other languages)
    "optimization": "note",  # what `migrate --optimize` would change (check --optimize)
    "convertible": "note",
    "limited": "warning",
    "unknown": "warning",
    "unchecked": "warning",  # a file gpu2npu could not read or parse: nothing is known of it
    "cuda-op": "error",
    "unsupported": "error",
}


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int
    column: int
    category: str  # a key of RANK
    rule: str  # rule id (G2N...), or the kind of report row (unsupported-api, unknown-api, cuda-op)
    api: str  # the API or the change's subject
    message: str  # what it is and what to do
    code: str = ""  # the source line, stripped (for fingerprints)

    @property
    def rank(self) -> int:
        return RANK[self.category]

    @property
    def severity(self) -> str:
        return SEVERITY[self.category]

    @property
    def fingerprint(self) -> str:
        """Stable across edits that only move the line: file, rule, API and the line's code."""
        text = "\x1f".join((self.file, self.rule, self.api, re.sub(r"\s+", " ", self.code)))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def findings_of(run, source_lines) -> List[Finding]:
    """Report rows and pending rewrites of a migration run, as findings. ``source_lines``
    maps a file to its lines (``.get(file, [])``), for the fingerprints' code."""
    found = []
    target = target_named(run.options.target)
    for row in run.apis.unsupported + (run.apis.unknown if target.gates_unknown_apis else []):
        category = _api_category(row)
        rule = "cuda-op" if category == "cuda-op" else row.rule or f"{category}-api"
        message = f"{row.op}: {row.tip} [{row.status}, {row.confidence}, {row.source}]"
        found.append(
            _finding(row.file, row.start_line, row.column, category, rule, row.op, message, source_lines)
        )
    for result in run.all_results:
        for item in result.reported:
            message = f"{item.subject}: {item.tip}" + (f" ({item.cell})" if item.cell else "")
            where = (result.rel, item.line, 1)
            found.append(_finding(*where, item.category, item.rule, item.subject, message, source_lines))
        if result.skipped:
            message = f"not checked: {reason_alone(result.skipped)}; fix the file or exclude it (--exclude)"
            found.append(
                _finding(result.rel, 1, 1, "unchecked", "not-checked", "not-checked", message, source_lines)
            )
        for change in result.changes:
            if _only_binds(change, run.index):
                continue  # the names the rewrites use: a consequence, no use of CUDA
            category, message = _pending(change, run.index)
            where = (result.rel, change.start_line, 1)
            found.append(_finding(*where, category, change.rule, change.rule, message, source_lines))
    return sorted(found)


def _pending(change, index) -> tuple:
    """A change migrate would make: a conversion, or an optimization of --optimize."""
    optimization = index.optimization_of(change.rule)
    if optimization is None:
        return (
            "convertible",
            f"not converted yet; gpu2npu migrate would {change.operation.lower()}: {change.message}",
        )
    option = "--optimize=all" if optimization.equivalence == "behaviour" else "--optimize"  # what applies it
    return (
        "optimization",
        f"gpu2npu migrate {option} would {change.operation.lower()}: {change.message} "
        f"[{optimization.category}, {optimization.equivalence}; {optimization.doc}]",
    )


def _only_binds(change, index) -> bool:
    rule = index.rules_by_id.get(change.rule)
    return rule is not None and rule.kind == "BindNamesRule"


def _api_category(row) -> str:
    if row.category == CUDA_OP:
        return "cuda-op"
    return {"unsupported": "unsupported", "unknown": "unknown"}.get(row.status, "limited")


def _finding(file, line, column, category, rule, api, message, source_lines) -> Finding:
    lines = source_lines.get(file, [])
    code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return Finding(file, line, column, category, rule, api, message, code)
