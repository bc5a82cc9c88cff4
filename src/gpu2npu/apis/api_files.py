"""-api files: ``full_unsupported_results.csv`` of earlier third-party analyses. Every library
function they list becomes an unsupported status, so the project's calls into it are reported.
The format is msFmkTransplt's: a ``3rd-party API`` column whose cells hold one or more names
(full name and re-export aliases, separated by white space); a name ending in ``.forward``
also stands for its class (calling the module object runs forward)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterable, List

from gpu2npu.errors import UserError
from gpu2npu.rules.model import Rule, RuleSet
from gpu2npu.source.files import FileTooLarge, NotRegularFile, read_regular_file
from gpu2npu.versions import known_versions

COLUMN = "3rd-party API"
MAX_BYTES = 64 * 1024 * 1024  # the largest library analysed so far gives well under 1 MiB
PASS_A_CSV = "pass the full_unsupported_results.csv of a third_party analysis"


def load_api_files(paths: Iterable[Path]) -> RuleSet:
    rule_set = RuleSet()
    for path in paths:
        for number, name in enumerate(_names(path)):
            rule_set.rules.append(_status_rule(path, number, name))
    return rule_set


def _names(path: Path) -> List[str]:
    reader = csv.DictReader(io.StringIO(_read_text(path), newline=""))
    try:
        if reader.fieldnames is None or COLUMN not in reader.fieldnames:
            raise UserError(f"-api file '{path}' has no '{COLUMN}' column", PASS_A_CSV)
        cells = [row[COLUMN] or "" for row in reader]
    except csv.Error as exc:  # a cell over the csv module's field limit
        raise UserError(f"-api file '{path}' is not a valid CSV file ({exc})", PASS_A_CSV) from None
    names = []
    for cell in cells:
        for name in cell.split():
            names.append(name)
            if name.endswith(".forward"):
                names.append(name[: -len(".forward")])
    return sorted(set(names))


def _read_text(path: Path) -> str:
    """Only a regular file (a FIFO would block, /dev/zero never ends), at most MAX_BYTES."""
    try:
        return read_regular_file(path, MAX_BYTES).decode("utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"-api file '{path}' does not exist", PASS_A_CSV) from None
    except NotRegularFile as exc:
        raise UserError(f"-api file '{path}' is not a regular file but {exc.kind}", PASS_A_CSV) from None
    except FileTooLarge:
        raise UserError(
            f"-api file '{path}' is larger than {MAX_BYTES // (1024 * 1024)} MiB", PASS_A_CSV
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"-api file '{path}' cannot be read ({exc})", PASS_A_CSV) from None


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
