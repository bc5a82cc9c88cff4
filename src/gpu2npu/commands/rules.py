"""``gpu2npu rules``: the rule table (``list``) and the status of an API with its facts (``explain``)."""

from __future__ import annotations

from typing import Optional, Sequence

from prettytable import PrettyTable

from gpu2npu.api_support import KnowledgeBase, explanation
from gpu2npu.rules.index import compile_index
from gpu2npu.rules.kind import kind_named
from gpu2npu.rules.loader import load_rules
from gpu2npu.styles import DEFAULT, style_named
from gpu2npu.targets import DEFAULT as TARGET_DEFAULT
from gpu2npu.targets import target_named
from gpu2npu.versions import compact_versions


def version_text(versions: frozenset) -> str:
    text = compact_versions(versions)
    return text if isinstance(text, str) else ", ".join(text)


def rules_table(
    rule_files: Sequence[str], version: Optional[str], style: str = DEFAULT, target: str = TARGET_DEFAULT
) -> str:
    """The rules of a migration mode (and the -r files) for ``version`` (None: every version)."""
    mode = style_named(style)
    rule_set = load_rules(rule_files, target_named(target).rules_for(mode))
    table = PrettyTable(["id", "kind", "versions", "what"])
    table.align = "l"
    rules = [
        r
        for r in rule_set.rules
        if (version is None or version in r.versions) and (r.switches is None or r.switches & mode.switches)
    ]
    for rule in sorted(rules, key=lambda r: (r.id.rstrip("0123456789"), len(r.id), r.id)):
        table.add_row([rule.id, rule.kind, version_text(rule.versions), kind_named(rule.kind).describe(rule)])
    return table.get_string()


def explain(name: str, version: str, rule_files: Sequence[str]) -> str:
    """Whether a torch API works on NPU for a version, and the facts behind the answer."""
    index = compile_index(load_rules(rule_files), version)
    kb = KnowledgeBase.load()
    answer = kb.lookup(name, version, index.overrides_for(name) or index.overrides_for(kb.table_name(name)))
    if answer is None:
        return (
            f"{name} (torch {version}): not judged; "
            "only torch.* names are checked against the Ascend API lists"
        )
    return "\n".join(explanation(answer))
