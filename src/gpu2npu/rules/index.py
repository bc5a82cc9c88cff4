"""Rules compiled for one target version into dictionaries keyed by what a node matches on.

Matching a node is then a dictionary lookup (qualified name, method name, attribute name,
string literal), so a pass costs the same whatever the number of rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from gpu2npu.rules.model import Rule, RuleSet


@dataclass(frozen=True)
class NameTarget:
    """Where a fully qualified name goes. ``new`` None: no NPU counterpart, leave it."""

    new: Optional[str]
    rule_id: str
    label: str  # word used in change messages: function, module, attribute, name


@dataclass(frozen=True)
class Rename:
    """A dot-free method or attribute rename (``.cuda()`` -> ``.npu()``)."""

    new: str
    rule_id: str
    label: str


@dataclass(frozen=True)
class StringTarget:
    old: str
    new: str
    rule_id: str
    match: str  # exact, prefix, device, substring
    label: str = "string"


@dataclass
class RuleIndex:
    version: str
    names: Dict[str, NameTarget] = field(default_factory=dict)
    methods: Dict[str, Rename] = field(default_factory=dict)
    attributes: Dict[str, Rename] = field(default_factory=dict)
    call_rules: Dict[str, List[Rule]] = field(default_factory=dict)  # qualified name or ".method"
    strings_exact: Dict[str, StringTarget] = field(default_factory=dict)
    strings_other: List[StringTarget] = field(default_factory=list)  # prefix, device, substring
    insert_imports: List[Rule] = field(default_factory=list)
    remove_imports: Dict[str, Rule] = field(default_factory=dict)
    rules_by_id: Dict[str, Rule] = field(default_factory=dict)
    api_status: Dict[str, List[Rule]] = field(default_factory=dict)  # ApiStatusRule overrides by api
    trigger_words: set = field(default_factory=set)  # regexes (plain words escaped)
    tree_trigger_words: set = field(default_factory=set)  # of the kinds that need a syntax tree
    triggers: Optional["re.Pattern[bytes]"] = None
    tree_triggers: Optional["re.Pattern[bytes]"] = None

    def add_call_rule(self, key: str, rule: Rule) -> None:
        self.call_rules.setdefault(key, []).append(rule)

    def longest_name_match(self, qualified: str):
        """The rule for ``qualified`` or its longest dotted prefix: (matched prefix, target) or None."""
        name = qualified
        while True:
            target = self.names.get(name)
            if target is not None:
                return name, target
            if "." not in name:
                return None
            name = name.rsplit(".", 1)[0]

    def needs_rewrite(self, data: bytes) -> bool:
        """Cheap first test on the raw bytes: can any rule fire in this file at all?"""
        return self.triggers is not None and self.triggers.search(data) is not None

    def needs_tree(self, data: bytes) -> bool:
        """Can a rule that edits the syntax tree fire here (not just a text-only import insertion)?"""
        return self.tree_triggers is not None and self.tree_triggers.search(data) is not None


def compile_index(rule_set: RuleSet, version: str, disabled_ids=()) -> RuleIndex:
    from gpu2npu.rewrite.kinds import KINDS

    index = RuleIndex(version=version)
    for rule in rule_set.active(version, disabled_ids):
        kind = KINDS[rule.kind]
        kind.compile(rule, index)
        index.rules_by_id[rule.id] = rule
        patterns = {re.escape(word) for word in kind.trigger_words(rule)}
        patterns |= set(getattr(kind, "trigger_patterns", lambda _: ())(rule))
        index.trigger_words.update(patterns)
        if not getattr(kind, "TEXT_ONLY", False):
            index.tree_trigger_words.update(patterns)
    index.triggers = _alternation(index.trigger_words)
    index.tree_triggers = _alternation(index.tree_trigger_words)
    return index


def _alternation(patterns) -> Optional["re.Pattern[bytes]"]:
    """One regex matching any of the patterns (longest first, so the scan stops early)."""
    if not patterns:
        return None
    return re.compile("|".join(sorted(patterns, key=len, reverse=True)).encode("utf-8"))


def last_segment(name: str) -> str:
    return name.rsplit(".", 1)[-1]
