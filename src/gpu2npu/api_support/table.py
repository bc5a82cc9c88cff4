"""Reading the generated status table (api_support.csv) and the curated tips.

A cell of the table is ``status/confidence/source``; the source names the deciding facts as
``fact@version`` joined by ``+`` (they agree) or ``~`` (they disagree). tools/gen_kb.py writes
the table; this module only reads it, so the installed wheel needs nothing but the CSV.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Tuple

from gpu2npu.versions import parse_version_spec

SUPPORTED, LIMITED, UNSUPPORTED, UNKNOWN = "supported", "supported_with_limits", "unsupported", "unknown"
STATUSES = (SUPPORTED, LIMITED, UNSUPPORTED, UNKNOWN)
LISTED, INFERRED, NONE = "listed", "inferred", "none"
NO_SOURCE = "-"
CURATED_TIPS = Path(__file__).resolve().parent / "curated_tips.csv"

_FACT_SEPARATORS = re.compile(r"[+~]")
# Python namespaces whose functions and methods are thin wrappers over the ATen operator of the same name.
OPERATOR_PREFIXES = ("torch.Tensor.", "torch.nn.functional.", "torch.")


def operator_name(api: str) -> Optional[str]:
    """The ATen operator a torch.* / torch.Tensor.* / torch.nn.functional.* function wraps."""
    for prefix in OPERATOR_PREFIXES:
        if api.startswith(prefix):
            rest = api[len(prefix) :]
            return rest if rest and "." not in rest else None
    return None


def usable(status: str) -> bool:
    """Whether a status lets the code run on NPU: the level at which two facts must agree."""
    return status in (SUPPORTED, LIMITED)


@dataclass(frozen=True)
class Fact:
    """One token of a source: ``docs@2.6.0`` -> Fact('docs', '2.6.0')."""

    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Cell:
    status: str
    confidence: str
    source: str

    @classmethod
    def parse(cls, text: str) -> "Cell":
        status, confidence, source = text.split("/", 2)
        return cls(status, confidence, source)

    @property
    def conflict(self) -> bool:
        return "~" in self.source

    def facts(self) -> Tuple[Fact, ...]:
        if self.source == NO_SOURCE:
            return ()
        return tuple(Fact(*token.split("@", 1)) for token in _FACT_SEPARATORS.split(self.source))


@dataclass(frozen=True)
class Row:
    """One API of the table: its NPU form name and the raw cells by version."""

    api: str
    npu_api: str
    cells: Dict[str, str]

    def cell(self, version: str) -> Cell:
        return Cell.parse(self.cells[version])


def read_table(path: Path) -> Tuple[Tuple[str, ...], Dict[str, Row]]:
    """(versions in column order, rows by API name)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        versions = tuple(header[2:])
        rows = {}
        for values in reader:
            rows[values[0]] = Row(values[0], values[1], dict(zip(versions, values[2:])))
    return versions, rows


@dataclass(frozen=True)
class CuratedTip:
    api: str
    versions: FrozenSet[str]
    tip: str
    source: str  # CUR: written by the gpu2npu authors, not taken from a list


def read_curated_tips(path: Path = CURATED_TIPS) -> Dict[str, List[CuratedTip]]:
    tips: Dict[str, List[CuratedTip]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            tip = CuratedTip(row["api"], parse_version_spec(row["versions"]), row["tip"], row["source"])
            tips.setdefault(tip.api, []).append(tip)
    return tips
