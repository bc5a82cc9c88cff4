"""The in-memory form of one rule entry, and the field checks every kind shares."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# msFmkTransplt feature switches that mean "active in a plain migration".
NORMAL_SWITCHES = frozenset({"normal", "2.1.0"})


@dataclass(frozen=True)
class Field:
    """One field of a rule kind: its type, whether it is required, and its default."""

    type: Any
    required: bool = False
    default: Any = None
    dotted: bool = False  # the value must be a (dotted) Python name
    nullable: bool = False
    help: str = ""


# Fields any entry of any kind may carry.
COMMON_FIELDS: Dict[str, Field] = {
    "id": Field(str, help="stable rule id, used by --disable-rule"),
    "versions": Field((str, list), help="'all', a list of versions or a range such as '>=2.1.0'"),
    "note": Field(str, help="why the rule exists"),
    "examples": Field(list, help="[{before: ..., after: ...}] snippets run as tests"),
    "feature_switch": Field(list, help="msFmkTransplt modes the entry is for (normal, specify_device, ...)"),
    "optimization": Field(dict, help="{category, equivalence, doc}: the entry is an --optimize change"),
}

# How sure an optimization is to keep the numbers: the same by construction, the same algorithm
# within rounding, or a change of what training does (applied only when asked for by name or =all).
EQUIVALENCE = ("exact", "tolerance", "behaviour")


@dataclass(frozen=True)
class Optimization:
    """What an --optimize rule is: its category (fused optimizer, amp, data loading, ...), its
    equivalence class and the document it comes from."""

    category: str
    equivalence: str
    doc: str


@dataclass(frozen=True)
class Rule:
    """A validated rule entry of one kind."""

    kind: str
    id: str
    fields: Dict[str, Any]
    versions: frozenset
    source: str  # "file: rules.Kind[i]", for messages
    note: str = ""
    examples: Tuple[Tuple[str, str], ...] = ()
    builtin: bool = False  # one of gpu2npu's own rules (rules/), not a user's
    switches: Optional[FrozenSet[str]] = None  # msFmkTransplt feature_switch: the modes it is for; None: all
    optimization: Optional[Optimization] = None  # set for the rules of rules/optimize (--optimize)

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    def get(self, name: str, default: Any = None) -> Any:
        value = self.fields.get(name)
        return default if value is None else value


@dataclass
class RuleSet:
    """Everything loaded from a list of rule files, before compilation for one version."""

    rules: List[Rule] = field(default_factory=list)
    disabled: set = field(default_factory=set)
    files: List[str] = field(default_factory=list)

    def extend(self, other: "RuleSet") -> None:
        self.rules.extend(other.rules)
        self.disabled |= other.disabled
        self.files.extend(other.files)

    def active(self, version: str, disabled_ids=(), switches: FrozenSet[str] = NORMAL_SWITCHES) -> List[Rule]:
        """The rules for ``version``, not disabled, and meant for a run with these ``switches``."""
        off = self.disabled | set(disabled_ids)
        return [
            rule
            for rule in self.rules
            if version in rule.versions
            and rule.id not in off
            and (rule.switches is None or rule.switches & switches)
        ]

    def ids(self) -> set:
        return {rule.id for rule in self.rules}


def check_type(value: Any, expected: Any) -> bool:
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def type_name(expected: Any) -> str:
    if isinstance(expected, tuple):
        return " or ".join(type_name(item) for item in expected)
    return {str: "a string", int: "an integer", bool: "true/false", list: "a list", dict: "a mapping"}.get(
        expected, getattr(expected, "__name__", str(expected))
    )
