"""Inline suppressions: ``# gpu2npu: ignore`` or ``# gpu2npu: ignore[API or rule id, ...]``
on the finding's line."""

from __future__ import annotations

import re

from gpu2npu.commands.check.findings import Finding

MARKER = re.compile(r"#\s*gpu2npu:\s*ignore(?:\[([^\]]*)\])?")


def is_suppressed(finding: Finding, line_text: str) -> bool:
    match = MARKER.search(line_text)
    if match is None:
        return False
    if match.group(1) is None:
        return True
    names = {name.strip() for name in match.group(1).split(",")}
    return finding.api in names or finding.rule in names
