"""Answering "is this torch API usable on NPU for torch X?" from the generated table.

``KnowledgeBase.load().lookup("torch.cdist", "2.7.1")`` gives an ``ApiStatus``: the status,
how sure it is, the facts behind it, an actionable tip and the decision trail. User rule files
may override an answer with ApiStatusRule entries (passed as ``overrides``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from gpu2npu.kb.chain import Context, decision_chain, lists_by_version
from gpu2npu.kb.table import (
    CURATED_TIPS,
    INFERRED,
    LIMITED,
    LISTED,
    NO_SOURCE,
    NONE,
    SUPPORTED,
    UNKNOWN,
    UNSUPPORTED,
    Cell,
    CuratedTip,
    Row,
    read_curated_tips,
    read_table,
)
from gpu2npu.rules.index import RuleIndex
from gpu2npu.rules.location import builtin_rules_dir
from gpu2npu.rules.model import Rule

TABLE_NAME = "api_support.csv"
LIST_NAMES = ("docs", "msprobe")  # a version "has an API list" when one of these exists for it


@dataclass(frozen=True)
class ApiStatus:
    """The answer for one API and one target torch version."""

    api: str
    version: str
    status: str  # supported | supported_with_limits | unsupported | unknown
    confidence: str  # listed | inferred | none
    source: str  # deciding facts, e.g. docs@2.6.0, msprobe@2.1.0+docs@2.6.0, user:<rule id>, -
    npu_api: str  # the NPU form of the name when the lists give one, else ""
    tip: str  # what to do about it, never empty
    chain: Tuple[str, ...]  # the facts consulted, in order, one sentence each


def normalise_api(name: str) -> str:
    """A class is judged by its name: ``torch.nn.Linear.__init__`` -> ``torch.nn.Linear``."""
    name = name.strip()
    return name.removesuffix(".__init__")


def is_torch_name(name: str) -> bool:
    """Only names under torch are judged: the lists know nothing about other packages."""
    return name == "torch" or name.startswith("torch.")


def default_tip(status: str, confidence: str, source: str, version: str, npu_api: str) -> str:
    """A short actionable text for a status, when neither a user rule nor a curated tip gives one."""
    as_npu = f" as {npu_api}" if npu_api else ""
    if status == SUPPORTED:
        if confidence == INFERRED:
            return f"likely supported on NPU for torch {version}{as_npu} (inferred, not listed): test it"
        return f"supported on NPU for torch {version}{as_npu}"
    if status == LIMITED:
        if "cpu@" in source:
            return f"runs on the CPU with torch_npu for torch {version}: expect it to be slow"
        return f"supported with limits on NPU for torch {version}{as_npu} (see the Ascend API list)"
    if status == UNSUPPORTED:
        if npu_api:
            return f"use {npu_api}"
        return f"not supported on NPU for torch {version}: replace it, or run this part on the CPU"
    return f"not validated on NPU for torch {version}: test it before relying on it"


def applicable_override(api: str, version: str, overrides: Iterable[Rule]) -> Optional[Rule]:
    """The last ApiStatusRule for this name and version (later rule files win)."""
    chosen = None
    for rule in overrides:
        if normalise_api(rule["api"]) == api and version in rule.versions:
            chosen = rule
    return chosen


def override_source(rule: Rule) -> str:
    """Built-in status rules (ids G2N...) are ours; anything else came from a user's -r file."""
    return f"rules:{rule.id}" if rule.id.startswith("G2N") else f"user:{rule.id}"


class KnowledgeBase:
    """The per-version status table plus the curated tips, read once."""

    def __init__(self, versions: Tuple[str, ...], rows: Dict[str, Row], tips: Dict[str, List[CuratedTip]]):
        self.versions = versions
        self._rows = rows
        self._tips = tips

    @classmethod
    def load(cls) -> "KnowledgeBase":
        """The built-in table (rules/api_support.csv, shipped in the wheel), cached."""
        return _builtin_knowledge_base()

    @classmethod
    def from_files(cls, table: Path, tips: Path = CURATED_TIPS) -> "KnowledgeBase":
        versions, rows = read_table(table)
        return cls(versions, rows, read_curated_tips(tips))

    def __contains__(self, api: str) -> bool:
        return normalise_api(api) in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def names(self) -> Iterator[str]:
        return iter(self._rows)

    def lookup(self, api: str, version: str, overrides: Iterable[Rule] = ()) -> Optional[ApiStatus]:
        """The status of ``api`` for torch ``version``; None for a name that is not judged
        (outside torch, and no override). ``overrides``: ApiStatusRule rules, e.g.
        ``index.api_status.get(api, ())`` of a compiled rule index."""
        if version not in self.versions:
            raise ValueError(f"no status column for torch {version!r}; known: {', '.join(self.versions)}")
        name = normalise_api(api)
        override = applicable_override(name, version, overrides)
        builtin = self._builtin_status(name, version) if is_torch_name(name) else None
        if override is not None:
            return self._overridden(name, version, override, builtin)
        return builtin

    def lookup_in(self, api: str, index: RuleIndex) -> Optional[ApiStatus]:
        """``lookup`` for the version of a compiled rule index, with its ApiStatusRule overrides."""
        return self.lookup(api, index.version, index.api_status.get(normalise_api(api), ()))

    # -- building answers ------------------------------------------------------------------------

    def _builtin_status(self, name: str, version: str) -> ApiStatus:
        row = self._rows.get(name)
        cell = row.cell(version) if row else Cell(UNKNOWN, NONE, NO_SOURCE)
        npu_api = row.npu_api if row else ""
        curated = self._curated_tip(name, version)
        chain = decision_chain(cell, self._context(name, version, row))
        if curated is not None:
            chain += (f"{curated.source}: curated tip for {name}",)
        tip = curated.tip if curated else default_tip(cell.status, cell.confidence, cell.source, version, npu_api)
        return ApiStatus(name, version, cell.status, cell.confidence, cell.source, npu_api, tip, chain)

    def _overridden(self, name: str, version: str, rule: Rule, builtin: Optional[ApiStatus]) -> ApiStatus:
        status, source = rule["status"], override_source(rule)
        npu_api = builtin.npu_api if builtin else ""
        tip = rule.get("tip") or default_tip(status, LISTED, source, version, npu_api)
        chain = (f"user rule {rule.id} ({rule.source}): {status}",)
        if builtin is not None:
            chain += (f"overrides the built-in answer {builtin.status}/{builtin.confidence}/{builtin.source}",)
        else:
            chain += ("the built-in lists do not judge names outside torch",)
        return ApiStatus(name, version, status, LISTED, source, npu_api, tip, chain)

    def _curated_tip(self, name: str, version: str) -> Optional[CuratedTip]:
        return next((tip for tip in self._tips.get(name, ()) if version in tip.versions), None)

    def _context(self, name: str, version: str, row: Optional[Row]) -> Context:
        return Context(name, version, row, self._lists[version], self._list_versions, self.versions)

    @cached_property
    def _lists(self) -> Dict[str, FrozenSet[str]]:
        return lists_by_version(self._rows, self.versions)

    @cached_property
    def _list_versions(self) -> Tuple[str, ...]:
        return tuple(v for v in self.versions if self._lists[v] & set(LIST_NAMES))


@lru_cache(maxsize=1)
def _builtin_knowledge_base() -> KnowledgeBase:
    return KnowledgeBase.from_files(builtin_rules_dir() / TABLE_NAME)



def explanation(answer: ApiStatus) -> List[str]:
    """The lines `gpu2npu rules explain` prints: the answer, then the chain of facts."""
    lines = [
        f"{answer.api} (torch {answer.version})",
        f"status:     {answer.status}",
        f"confidence: {answer.confidence}",
        f"source:     {answer.source}",
    ]
    if answer.npu_api:
        lines.append(f"npu_api:    {answer.npu_api}")
    lines.append(f"tip:        {answer.tip}")
    lines.append("chain:")
    lines += [f"  {number}. {fact}" for number, fact in enumerate(answer.chain, 1)]
    return lines
