"""KeywordRenameRule: rename a keyword argument of a call, optionally changing its value
(``torch.autograd.profiler.profile(use_cuda=True)`` -> ``(use_device='npu')``).

``value_map`` maps the old value's source text to new source text (null deletes the
argument); ``default_value`` is a template for other values, with ``{value}`` standing for the
old source; without either the value is kept.
"""

from __future__ import annotations

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import call_key, check_names, is_expression, is_identifier, shortened
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import delete_argument, keyword_index


class KeywordRename(RuleKind):
    name = "KeywordRenameRule"
    fields = {
        "func_name": Field(str, required=True, help="qualified function name, or a method name"),
        "old_keyword": Field(str, required=True, help="keyword to rename, e.g. use_cuda"),
        "new_keyword": Field(str, required=True, help="new keyword, e.g. use_device"),
        "value_map": Field(dict, default=None, help="old value source -> new value source (null deletes)"),
        "default_value": Field(str, default=None, help="template for other values, {value} = old source"),
    }

    def validate(self, fields):
        problem = check_names(func_name=fields["func_name"])
        if problem:
            return problem
        for key in ("old_keyword", "new_keyword"):
            if not is_identifier(fields[key]):
                return f"'{key}' must be a plain name, not {fields[key]!r}"
        return _values_problem(fields)

    def compile(self, rule, index):
        index.add_call_edit(call_key(rule["func_name"]), rule, self.apply)

    def trigger_words(self, rule):
        return {rule["old_keyword"]}

    def describe(self, rule):
        return f"{rule['func_name']}({rule['old_keyword']}=...) -> ({rule['new_keyword']}=...)"

    def subject(self, rule):
        return rule["func_name"]

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        position = keyword_index(call, rule["old_keyword"])
        if position is None:
            return call
        arg = call.args[position]
        old_code = ctx.code(arg.value)
        value_map = rule.get("value_map", {})
        if old_code in value_map and value_map[old_code] is None:
            ctx.record(
                "DELETE", f"delete the arg {rule['old_keyword']} of function {rule['func_name']}", rule.id
            )
            return delete_argument(call, position)
        if old_code in value_map:
            new_value = cst.parse_expression(str(value_map[old_code]))
        elif rule["default_value"]:
            new_value = cst.parse_expression(rule["default_value"].replace("{value}", old_code))
        else:
            new_value = arg.value
        new_code = f"{rule['new_keyword']}={ctx.code(new_value)}"
        ctx.record(
            "MODIFY",
            f"change the arg {rule['old_keyword']}={old_code} of function {rule['func_name']} to {new_code}",
            rule.id,
        )
        args = list(call.args)
        args[position] = arg.with_changes(keyword=cst.Name(rule["new_keyword"]), value=new_value)
        return call.with_changes(args=args)


def _values_problem(fields):
    """Values are Python source: each must parse as an expression here, not in the middle of a run."""
    sources = [("value_map", value) for value in (fields["value_map"] or {}).values() if value is not None]
    if fields["default_value"]:
        sources.append(("default_value", fields["default_value"].replace("{value}", "x")))
    for field, source in sources:
        if not isinstance(source, str) or not is_expression(source):
            return f"'{field}' holds {shortened(source)}, which is not a Python expression"
    return None
