"""DeviceArgRule: make an integer device index reach the NPU.

``x.to(0)``, ``torch.zeros(3, device=args.gpu)`` and friends mean ``cuda:N`` when given an
int. The argument is rewritten only where it may be an int (not for a string, a
``torch.device``, a dtype, a tensor, or a name the file binds only to such values):

* an int literal becomes a literal: ``x.to(0)`` -> ``x.to('npu:0')``;
* a plain name or attribute is guarded: ``f'npu:{d}' if isinstance(d, int) else d``;
* anything that may have side effects is evaluated once, through a small lambda (valid in
  every scope, unlike an assignment expression):
  ``(lambda d: f'npu:{d}' if isinstance(d, int) else d)(next(it))``.

With ``only_argument``, only a call passing nothing else: ``torch.device(t, i)`` takes a type first.
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
from gpu2npu.source.arguments import replace_value
from gpu2npu.source.torch_names import DTYPE_NAMES

STRING_NODES = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


# Values apply() never wraps whatever the file says: strings, dtypes, None, and `x.device` --
# unless the file assigns a `.device` attribute or parses arguments (then `x.device` may be an
# int: see _device_attribute_where_it_may_be_int).
_DEVICE_ATTRIBUTE = r"[\w.]*\.device\b"
_NEVER_INT = (
    r"(?![rRbBuUfF]{0,2}['\"])(?!None\b)(?!(?:[\w.]*[._])?dtype\b)(?!" + _DEVICE_ATTRIBUTE + ")"
    r"(?!torch\.(?:" + "|".join(sorted(DTYPE_NAMES)) + r")\b)"
)
_MAY_MAKE_DEVICE_ATTRIBUTES_INT = r"\.device\s*=[^=]|add_argument"


def _device_attribute_where_it_may_be_int(argument: str) -> tuple:
    """A gated trigger: ``x.device`` passed as ``argument``, in a file that assigns a ``.device``
    attribute or parses arguments."""
    return (_MAY_MAKE_DEVICE_ATTRIBUTES_INT, argument + _DEVICE_ATTRIBUTE)


class DeviceArg(CallArgumentKind):
    name = "DeviceArgRule"
    fields = {
        "func_name": Field(
            str, required=True, help="qualified function name, or a method name (to, new_zeros)"
        ),
        "arg_idx": Field(int, default=-1, help="position among the positional arguments"),
        "arg_keyword": Field(str, help="keyword of the device argument"),
        "device_type": Field(str, default="npu", help="device type an int index is turned into"),
        "only_argument": Field(
            bool, default=False, help="only where the call passes nothing else (torch.device(type, index))"
        ),
    }

    def validate(self, fields):
        # written into a string literal: a name only (a quote would let a rule file write code)
        if not fields["device_type"].isidentifier():
            return f"'device_type' must be a device type name such as npu, not {fields['device_type']!r}"
        return super().validate(fields)

    def triggers(self, rule):
        """Regexes a file must match for this rule to possibly fire in it (plain words would send
        most model files to libcst)."""
        name = rule["func_name"]
        callee = re.escape("." + name if "." not in name else name_trigger(name))
        patterns = set()
        if rule["arg_keyword"]:
            keyword = r"\b" + re.escape(rule["arg_keyword"]) + r"\s*=\s*"
            patterns |= {keyword + _NEVER_INT, _device_attribute_where_it_may_be_int(keyword)}
        if rule["arg_idx"] == 0:
            call = callee + r"\(\s*"
            patterns |= {
                call + r"(?!\))(?!\w+\s*=[^=])" + _NEVER_INT,
                _device_attribute_where_it_may_be_int(call),
            }
        elif rule["arg_idx"] > 0:
            patterns.add(callee)
        return patterns

    def describe(self, rule):
        return f"{rule['func_name']}({argument_place(rule)}): int device index -> '{rule['device_type']}:N'"

    def edit(self, rule, call: cst.Call, position: int, ctx) -> cst.Call:
        value = call.args[position].value
        if isinstance(value, STRING_NODES) or is_guarded(value):
            return call
        if rule["only_argument"] and len(call.args) > 1:
            return call  # torch.device(device_type, index): the first is the type, never an index
        device_type = rule["device_type"]
        if isinstance(value, cst.Integer):
            new_value = cst.SimpleString(f"'{device_type}:{value.value}'")
        else:
            code = ctx.code(value)
            is_int = ctx.facts.is_int(code, ctx.line())
            if is_int is False:
                return call
            new_value = cst.parse_expression(device_source(code, device_type, bool(is_int), is_pure(value)))
        where = argument_label(call.args[position], rule)
        message = f"an int device index in the arg {where} of {rule['func_name']} becomes '{device_type}:N'"
        ctx.record("MODIFY", message, rule.id)
        return replace_value(call, position, new_value)


def device_source(code: str, device_type: str, certainly_int: bool, pure: bool) -> str:
    """``f'npu:{code}'`` for a value that is an int; else the value when it is no int at run time."""
    quotes_fit = not ("'" in code and '"' in code) and "\\" not in code and "\n" not in code
    quote = '"' if "'" in code else "'"
    if certainly_int and quotes_fit:
        return f"f{quote}{device_type}:{{{code}}}{quote}"
    if not pure or not quotes_fit:
        return f"(lambda d: f'{device_type}:{{d}}' if isinstance(d, int) else d)({code})"
    return f"f{quote}{device_type}:{{{code}}}{quote} if isinstance({code}, int) else {code}"


def is_pure(node: cst.BaseExpression) -> bool:
    """Evaluating it twice is harmless: names, attributes, constant subscripts."""
    if isinstance(node, (cst.Name, cst.Integer)):
        return True
    if isinstance(node, cst.Attribute):
        return is_pure(node.value)
    if isinstance(node, cst.Subscript):
        return is_pure(node.value) and all(
            isinstance(element.slice, cst.Index) and is_pure_constant(element.slice.value)
            for element in node.slice
        )
    return False


def is_pure_constant(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.SimpleString, cst.Name)) or is_pure(node)


def is_guarded(node: cst.BaseExpression) -> bool:
    """Already ``... if isinstance(x, int) else ...`` (our own output, also inside the lambda)."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Lambda):
        node = node.func.body
    if not isinstance(node, cst.IfExp):
        return False
    test = node.test
    return (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Name)
        and test.func.value == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[1].value, cst.Name)
        and test.args[1].value.value == "int"
    )
