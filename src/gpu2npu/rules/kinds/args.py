"""ArgsModifyRule (msFmkTransplt): change or delete one argument of a call.

``arg_idx`` counts positional arguments only (the reference counted keywords too, so
``y.to(non_blocking=True)`` was mangled); ``arg_keyword`` names a keyword argument. ``arg_new``
is the new source text, in which ``replace_device_int`` stands for the old argument; an empty
``arg_new`` deletes the argument. A ``white_list`` regex found (case-insensitively) in the
argument's source leaves it alone. A keyword argument stays a keyword argument.
"""

from __future__ import annotations

import re

import libcst as cst

from gpu2npu.rules.kinds._common import (
    CallArgumentKind,
    argument_label,
    argument_place,
    name_trigger,
)
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import delete_argument, replace_value

PLACEHOLDER = "replace_device_int"


class ArgsModify(CallArgumentKind):
    name = "ArgsModifyRule"
    fields = {
        "func_name": Field(str, required=True, help="qualified function name, or a method name"),
        "arg_idx": Field(int, default=-1, help="position among the positional arguments"),
        "arg_keyword": Field(str, help="keyword of the argument"),
        "arg_new": Field(str, required=True, help="new source text ('' deletes the argument)"),
        "white_list": Field(list, default=(), help="regexes that leave a matching argument alone"),
    }

    def validate(self, fields):
        problem = super().validate(fields)
        if problem:
            return problem
        if fields["arg_new"]:
            try:
                cst.parse_expression(fields["arg_new"].replace(PLACEHOLDER, "x"))
            except cst.ParserSyntaxError:
                return f"'arg_new' is not a Python expression: {fields['arg_new']!r}"
        for pattern in fields["white_list"]:
            try:
                re.compile(str(pattern))
            except re.error as exc:
                return f"white_list pattern {pattern!r} is not a valid regex ({exc})"
        return None

    def trigger_words(self, rule):
        name = rule["func_name"]
        return {name_trigger(name)} if "." in name else {f".{name}("}

    def describe(self, rule):
        action = "delete" if rule["arg_new"] == "" else f"set to {rule['arg_new']}"
        return f"{rule['func_name']}({argument_place(rule)}): {action}"

    def edit(self, rule, call: cst.Call, position: int, ctx) -> cst.Call:
        old_code = ctx.code(call.args[position].value)
        if any(re.search(str(pattern), old_code, re.IGNORECASE) for pattern in rule["white_list"]):
            return call
        where = argument_label(call.args[position], rule)
        if rule["arg_new"] == "":
            ctx.record("DELETE", f"delete the arg {where} of function {rule['func_name']}", rule.id)
            return delete_argument(call, position)
        new_code = rule["arg_new"].replace(PLACEHOLDER, old_code)
        if new_code == old_code:
            return call
        ctx.record("MODIFY", f"change the arg {where} of function {rule['func_name']} to {new_code}", rule.id)
        return replace_value(call, position, cst.parse_expression(new_code))
