"""The rule table shown by ``gpu2npu rules list``."""

from __future__ import annotations

from typing import Optional, Sequence

from prettytable import PrettyTable

from gpu2npu.rules.kind import kind_named
from gpu2npu.rules.loader import load_builtin_rules, load_rule_files
from gpu2npu.versions import compact_versions


def version_text(versions: frozenset) -> str:
    text = compact_versions(versions)
    return text if isinstance(text, str) else ", ".join(text)


def rules_table(rule_files: Sequence[str], version: Optional[str]) -> str:
    rule_set = load_builtin_rules()
    rule_set.extend(load_rule_files(rule_files))
    table = PrettyTable(["id", "kind", "versions", "what"])
    table.align = "l"
    rules = [r for r in rule_set.rules if version is None or version in r.versions]
    for rule in sorted(rules, key=lambda r: (r.id.rstrip("0123456789"), len(r.id), r.id)):
        table.add_row([rule.id, rule.kind, version_text(rule.versions), kind_named(rule.kind).describe(rule)])
    return table.get_string()
