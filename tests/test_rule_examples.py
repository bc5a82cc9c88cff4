"""Every ``examples`` entry of every built-in rule runs as a test (the rule documents itself).

An example is migrated with all built-in rules of the first migration mode that has the rule,
for the newest version the rule applies to; an example that starts a program is the entry script.
The examples of rules on other file kinds (shell, configs, requirements...) are files of that
kind, migrated by it.
"""

import pytest
from helpers import builtin_index, migrate, migrate_file

from gpu2npu.rules.kind import FileRuleKind, kind_named
from gpu2npu.rules.loader import OPTIMIZATIONS, load_builtin_rules
from gpu2npu.styles import styles
from gpu2npu.targets import targets
from gpu2npu.versions import version_key


def rules_by_mode():
    """(rule, (mode, target, optimize)) for each built-in rule with examples, in the first mode and
    target that have it; the rules of rules/optimize with --optimize."""
    seen = set()
    for target in targets():
        for style in styles():
            if target.modes is not None and style.name not in target.modes:
                continue
            for rule in load_builtin_rules(target.rules_for(style)).rules:
                if rule.examples and rule.id not in seen:
                    seen.add(rule.id)
                    yield rule, (style.name, target.name, False)
    for rule in load_builtin_rules((OPTIMIZATIONS,)).rules:  # --optimize: the full migration plus them
        if rule.examples:
            yield rule, ("full", "npu", True)


RULES = list(rules_by_mode())
CASES = [
    (rule, mode, number, before, after)
    for rule, mode in RULES
    for number, (before, after) in enumerate(rule.examples)
]


@pytest.mark.parametrize("rule,mode,number,before,after", CASES, ids=[f"{c[0].id}-{c[2]}" for c in CASES])
def test_rule_example(rule, mode, number, before, after):
    version = max(rule.versions, key=version_key)
    index = builtin_index(version, *mode)
    assert rule.id in index.rules_by_id
    kind = kind_named(rule.kind)
    if isinstance(kind, FileRuleKind):  # an example of another file kind: a file of that kind
        new = migrate_file(kind.example_file, before.encode("utf-8"), version, index=index).new_bytes
        assert (new.decode("utf-8") if new is not None else before) == after
    else:
        assert migrate(before, version, index=index, dedent=False) == after


def test_examples_exist_for_every_hand_written_kind():
    kinds_with_examples = {rule.kind for rule, _ in RULES}
    assert {
        "InsertImportRule",
        "RemoveImportRule",
        "MethodRenameRule",
        "ReplaceAttributeRule",
        "ReplaceStringRule",
        "NameRenameRule",
        "ArgsModifyRule",
        "KeywordRenameRule",
        "EnvVarRenameRule",
        "OptimizeCallRule",
        "KeywordSetRule",
        "DeviceDtypeRule",
        "CallMappingRule",
    } <= kinds_with_examples
