"""Every ``examples`` entry of every built-in rule runs as a test (the rule documents itself).

An example is migrated with all built-in rules for the newest version the rule applies to.
"""

import pytest
from helpers import builtin_index, migrate

from gpu2npu.rules.loader import load_builtin_rules
from gpu2npu.versions import version_key

RULES = [rule for rule in load_builtin_rules().rules if rule.examples]
CASES = [
    (rule, number, before, after) for rule in RULES for number, (before, after) in enumerate(rule.examples)
]


@pytest.mark.parametrize("rule,number,before,after", CASES, ids=[f"{c[0].id}-{c[1]}" for c in CASES])
def test_rule_example(rule, number, before, after):
    version = max(rule.versions, key=version_key)
    assert rule.id in builtin_index(version).rules_by_id
    assert migrate(before, version, dedent=False) == after


def test_examples_exist_for_every_hand_written_kind():
    kinds_with_examples = {rule.kind for rule in RULES}
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
    } <= kinds_with_examples
