"""A rule kind defined outside gpu2npu, as a contributor would add one: one class. Importing
this module registers it (tests/test_rule_kinds.py)."""

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.model import Field


class AddKeyword(RuleKind):
    """Give calls of ``func_name`` the argument ``keyword=value`` when they lack it."""

    name = "AddKeywordRule"
    fields = {
        "func_name": Field(str, required=True, dotted=True, help="qualified function name"),
        "keyword": Field(str, required=True, help="keyword to add"),
        "value": Field(str, required=True, help="its value, as source text"),
    }

    def validate(self, fields):
        return (
            None
            if fields["keyword"].isidentifier()
            else f"'keyword' must be a name, not {fields['keyword']!r}"
        )

    def compile(self, rule, index):
        index.add_call_edit(rule["func_name"], rule, self.apply)

    def trigger_words(self, rule):
        return {rule["func_name"].rsplit(".", 1)[-1]}

    def describe(self, rule):
        return f"{rule['func_name']}(...) gains {rule['keyword']}={rule['value']}"

    def subject(self, rule):
        return rule["func_name"]

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        if any(arg.keyword is not None and arg.keyword.value == rule["keyword"] for arg in call.args):
            return call
        ctx.record("MODIFY", f"add {rule['keyword']}={rule['value']} to {rule['func_name']}", rule.id)
        tight = cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        )
        added = cst.Arg(cst.parse_expression(rule["value"]), keyword=cst.Name(rule["keyword"]), equal=tight)
        return call.with_changes(args=[*call.args, added])
