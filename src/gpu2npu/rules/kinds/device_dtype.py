"""DeviceDtypeRule (``migrate --optimize``): a call that makes a tensor on the device in a dtype
the NPU lacks gets another dtype (``torch.tensor(x, dtype=torch.float64, device='cuda')`` ->
``dtype=torch.float32``). "On the device" is what the call writes out: ``device`` is a string
literal naming a CUDA or NPU device (``'cuda'``, ``'npu:0'``, ``f'cuda:{rank}'``) or
``torch.device`` of one. A call whose device is a variable, or which does not pass a dtype of
``dtypes``, is left alone (its dtype stays reported as unsupported).

    rules:
      DeviceDtypeRule:
        - id: G2N2080
          func_names: [torch.tensor, torch.zeros, ...]   # or a method name: to
          parameters: [device, dtype]   # positions, for calls that pass them by position
          dtypes: {torch.float64: torch.float32}
          optimization: {category: dtype, equivalence: behaviour, doc: ...}
"""

from __future__ import annotations

import libcst as cst

from gpu2npu.rules.index import DEVICE_TEXT
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import call_key, check_names, last, listed_names
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import find_argument, replace_value
from gpu2npu.source.names import dotted_expression


class DeviceDtype(RuleKind):
    name = "DeviceDtypeRule"
    fields = {
        "func_names": Field(list, required=True, help="qualified names of the calls, or method names"),
        "parameters": Field(list, default=(), help="the callee's positional parameters, in order"),
        "dtypes": Field(dict, required=True, help="dtype on the device -> the dtype to use there"),
    }

    def validate(self, fields):
        dtypes = fields["dtypes"]
        names = {**listed_names("func_names", fields["func_names"]), **listed_names("dtypes", list(dtypes))}
        names.update(listed_names("dtypes values", list(dtypes.values())))
        return check_names(**names)

    def compile(self, rule, index):
        for func_name in rule["func_names"]:
            index.add_call_edit(call_key(func_name), rule, self.apply)
            index.device_dtype_calls[call_key(func_name)] = (
                tuple(rule["parameters"]),
                frozenset(rule["dtypes"]),
            )

    def trigger_words(self, rule):
        return {last(dtype) for dtype in rule["dtypes"]}

    def describe(self, rule):
        changes = ", ".join(f"{old} -> {new}" for old, new in rule["dtypes"].items())
        return f"on the device: {changes} ({', '.join(rule['func_names'])})"

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        dtype_at = _argument(call, rule, "dtype")
        if dtype_at is None:
            return call
        old = ctx.qualified_name(call.args[dtype_at].value)
        new = rule["dtypes"].get(old)
        device_at = _argument(call, rule, "device")
        if new is None or device_at is None or not _names_the_device(call.args[device_at].value, ctx):
            return call
        ctx.absolute_name_used(new.split(".")[0])
        what = f"make the tensor on the device in {new}, not {old}"
        ctx.record("MODIFY", what, rule.id, resolves=(old,))
        return replace_value(call, dtype_at, dotted_expression(new))


def _argument(call: cst.Call, rule, name: str):
    parameters = rule["parameters"]
    position = parameters.index(name) if name in parameters else -1
    return find_argument(call, position, name)


def _names_the_device(value: cst.BaseExpression, ctx) -> bool:
    """Whether ``value`` is written as a CUDA or NPU device: a string, an f-string starting with
    one, or ``torch.device`` of either."""
    if isinstance(value, cst.SimpleString):
        return isinstance(value.evaluated_value, str) and bool(DEVICE_TEXT.match(value.evaluated_value))
    if isinstance(value, cst.FormattedString) and value.parts:
        first = value.parts[0]
        return isinstance(first, cst.FormattedStringText) and bool(DEVICE_TEXT.match(first.value))
    if isinstance(value, cst.Call) and value.args and ctx.qualified_name(value.func) == "torch.device":
        return value.args[0].keyword is None and _names_the_device(value.args[0].value, ctx)
    return False
