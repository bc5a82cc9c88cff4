"""A baseline: findings the team has accepted. Later runs fail only on findings not in it.

Entries are fingerprints of (file, rule, API, code of the line), counted, so an unrelated edit
that moves lines keeps them, and a second copy of the same finding in a file is new.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Iterable, List

from gpu2npu.commands.check.findings import Finding
from gpu2npu.errors import UserError

FORMAT_VERSION = 1


def write_baseline(path: Path, findings: Iterable[Finding]) -> None:
    counts = Counter(f.fingerprint for f in findings)
    entries = []
    for finding in sorted({f.fingerprint: f for f in findings}.values()):
        entries.append(
            {
                "fingerprint": finding.fingerprint,
                "count": counts[finding.fingerprint],
                "file": finding.file,
                "rule": finding.rule,
                "api": finding.api,
                "code": finding.code,
            }
        )
    data = {"tool": "gpu2npu", "baseline_version": FORMAT_VERSION, "findings": entries}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_baseline(path: Path) -> Counter:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Counter({e["fingerprint"]: int(e["count"]) for e in data["findings"]})
    except FileNotFoundError:
        raise UserError(f"baseline '{path}' does not exist", "create it with --update-baseline") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(
            f"baseline '{path}' is not a gpu2npu baseline ({exc})", "recreate it with --update-baseline"
        ) from None


def new_findings(findings: List[Finding], accepted: Counter) -> List[Finding]:
    """The findings beyond what the baseline accepts (each accepted fingerprint, count times)."""
    left = Counter(accepted)
    fresh = []
    for finding in findings:
        if left[finding.fingerprint] > 0:
            left[finding.fingerprint] -= 1
        else:
            fresh.append(finding)
    return fresh
