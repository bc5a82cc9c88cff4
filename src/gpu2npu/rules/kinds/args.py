"""ArgsModifyRule (msFmkTransplt): change or delete one argument of a call.

``arg_idx`` counts positional arguments only (the reference counted keywords too, so
``y.to(non_blocking=True)`` was mangled); ``arg_keyword`` names a keyword argument. ``arg_new``
is the new source text, in which ``replace_device_int`` stands for the old argument; an empty
``arg_new`` deletes the argument. A ``white_list`` regex found (case-insensitively) in the
argument's source leaves it alone; a search that runs past WHITE_LIST_TIMEOUT_S (a pattern that
backtracks without end, such as ``(a|aa)+$``) leaves it alone too. A keyword argument stays a
keyword argument.
"""

from __future__ import annotations

import functools
from typing import Optional

import libcst as cst
import regex

from gpu2npu.rules.kinds._common import (
    ARGUMENT_FIELDS,
    CallArgumentKind,
    argument_label,
    argument_place,
    dotted_name,
    is_expression,
    method_word,
    shortened,
)
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import delete_argument, replace_value

PLACEHOLDER = "replace_device_int"
# A white_list search of an argument's text (a few dozen characters) takes microseconds; one still
# running after 0.1 s is backtracking without end, and a file may hold many calls to search.
WHITE_LIST_TIMEOUT_S = 0.1


class ArgsModify(CallArgumentKind):
    name = "ArgsModifyRule"
    fields = {
        **ARGUMENT_FIELDS,
        "arg_new": Field(str, required=True, help="new source text ('' deletes the argument)"),
        "white_list": Field(list, default=(), help="regexes that leave a matching argument alone"),
        "unwrap": Field(
            list,
            default=(),
            help="calls of one argument (torch.cuda.device): only where the argument is one, and "
            "replace_device_int stands for its argument",
        ),
    }

    def validate(self, fields):
        problem = super().validate(fields)
        if problem:
            return problem
        if fields["arg_new"] and not is_expression(fields["arg_new"].replace(PLACEHOLDER, "x")):
            return f"'arg_new' is not a Python expression: {shortened(fields['arg_new'])}"
        return _white_list_problem(fields["white_list"])

    def trigger_words(self, rule):
        return method_word(rule["func_name"], f".{rule['func_name']}(")

    def trigger_names(self, rule):
        return dotted_name(rule["func_name"])

    def describe(self, rule):
        action = "delete" if rule["arg_new"] == "" else f"set to {rule['arg_new']}"
        return f"{rule['func_name']}({argument_place(rule)}): {action}"

    def edit(self, rule, call: cst.Call, position: int, ctx) -> cst.Call:
        old_code = ctx.code(call.args[position].value)
        if kept_by_white_list(rule["white_list"], old_code):
            return call
        where = argument_label(call.args[position], rule)
        if rule["arg_new"] == "":
            ctx.record("DELETE", f"delete the arg {where} of function {rule['func_name']}", rule.id)
            return delete_argument(call, position)
        placed = old_code
        if rule["unwrap"]:
            inner = _unwrapped(rule["unwrap"], call, position, ctx)
            if inner is None:
                return call
            placed = ctx.code(inner)
        new_code = rule["arg_new"].replace(PLACEHOLDER, placed)
        if new_code == old_code:
            return call
        ctx.record("MODIFY", f"change the arg {where} of function {rule['func_name']} to {new_code}", rule.id)
        return replace_value(call, position, cst.parse_expression(new_code))


def _unwrapped(names, call: cst.Call, position: int, ctx) -> Optional[cst.BaseExpression]:
    """The only argument of the call given at ``position`` where the source calls one of ``names``
    there (``torch.cuda.device(i)``: ``i``), read on the original call (a rule may rename it)."""
    original = ctx.original_call.args
    value = original[position].value if len(original) == len(call.args) else None
    argument = call.args[position].value
    if not isinstance(value, cst.Call) or not isinstance(argument, cst.Call) or len(argument.args) != 1:
        return None
    if ctx.qualified_name(value.func) not in names or argument.args[0].keyword:
        return None
    return argument.args[0].value


def _white_list_problem(patterns) -> Optional[str]:
    """The first white_list pattern that does not compile, as a problem message."""
    for pattern in patterns:
        try:
            white_list_regex(str(pattern))
        except regex.error as exc:
            return f"white_list pattern {pattern!r} is not a valid regex ({exc})"
    return None


def kept_by_white_list(patterns, old_code: str) -> bool:
    """Whether a white_list pattern is found in the argument's source. A search that times out
    counts as found: an argument a pattern cannot decide in time is kept, never rewritten."""
    for pattern in patterns:
        try:
            if white_list_regex(str(pattern)).search(old_code, timeout=WHITE_LIST_TIMEOUT_S):
                return True
        except TimeoutError:
            return True
    return False


@functools.lru_cache(maxsize=256)
def white_list_regex(pattern: str) -> regex.Pattern:
    # The regex package, unlike re, can stop a search after a timeout.
    return regex.compile(pattern, regex.IGNORECASE)
