"""-api files: ``full_unsupported_results.csv`` of earlier third-party analyses. Every library
function they list becomes an unsupported status, so the project's calls into it are reported.
The format is msFmkTransplt's: a ``3rd-party API`` column whose cells hold one or more names
(full name and re-export aliases, separated by white space); a name ending in ``.forward``
also stands for its class (calling the module object runs forward)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable, List

from gpu2npu.errors import UserError
from gpu2npu.rules.model import Rule, RuleSet
from gpu2npu.versions import known_versions

COLUMN = "3rd-party API"


def load_api_files(paths: Iterable[Path]) -> RuleSet:
    rule_set = RuleSet()
    for path in paths:
        for number, name in enumerate(_names(path)):
            rule_set.rules.append(_status_rule(path, number, name))
    return rule_set


def _names(path: Path) -> List[str]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or COLUMN not in reader.fieldnames:
                raise UserError(
                    f"-api file '{path}' has no '{COLUMN}' column", "pass a full_unsupported_results.csv"
                )
            cells = [row[COLUMN] or "" for row in reader]
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"-api file '{path}' cannot be read ({exc})", "pass a readable CSV file") from None
    names = []
    for cell in cells:
        for name in cell.split():
            names.append(name)
            if name.endswith(".forward"):
                names.append(name[: -len(".forward")])
    return sorted(set(names))


def _status_rule(path: Path, number: int, name: str) -> Rule:
    return Rule(
        kind="ApiStatusRule",
        id=f"{path.name}:{number}",
        fields={
            "api": name,
            "status": "unsupported",
            "tip": f"calls into {name}, which uses APIs not supported on NPU ({path.name})",
        },
        versions=frozenset(known_versions()),
        source=f"{path.name}: {COLUMN}",
    )
