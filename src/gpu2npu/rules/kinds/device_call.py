"""DeviceCallRule: a CUDA-only callable moves to its generic counterpart, which takes the device
type first: ``torch.cuda.amp.autocast(...)`` -> ``torch.autocast(DEVICE_TYPE, ...)``,
``GradScaler(...)`` (from torch.cuda.amp) -> ``torch.amp.GradScaler(DEVICE_TYPE, ...)``. The name
moves wherever it is referenced (imports included, as NameRenameRule); each call gets the bound
name ``device`` (BindNamesRule) as its first argument, where the rule names one. A new name under a
bound name (``DEVICE_MODULE.amp.GradScaler``) cannot be imported: a call of the name imported from
CUDA then calls the bound name's attribute instead. With ``called_only``, a reference that is
not a call (``partial(torch.cuda.amp.autocast, dtype=...)``, ``ac = torch.cuda.amp.autocast``)
keeps the name and is reported with ``tip``: the new name called later would lack the device.
``parameters`` lists the old callable's parameters in order where the new one takes them in
another order after the device (``torch.cuda.amp.autocast(enabled, dtype, ...)`` but
``torch.autocast(device_type, dtype, enabled, ...)``): positional arguments become keywords.

    rules:
      DeviceCallRule:
        - {id: G2N910, old_name: torch.cuda.amp.autocast, new_name: torch.autocast, device: DEVICE_TYPE}
"""

import libcst as cst

from gpu2npu.rules.index import NameTarget
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_identifier, name_subject
from gpu2npu.rules.model import Field
from gpu2npu.source.names import dotted_expression


class DeviceCall(RuleKind):
    name = "DeviceCallRule"
    fields = {
        "old_name": Field(str, required=True, dotted=True, help="qualified CUDA-only name"),
        "new_name": Field(str, required=True, dotted=True, help="qualified generic name"),
        "device": Field(str, help="the bound name passed first, e.g. DEVICE_TYPE (none: no argument)"),
        "called_only": Field(bool, default=False, help="a reference that is not a call keeps the name"),
        "tip": Field(str, default="", help="what to do where a reference keeps the name (called_only)"),
        "parameters": Field(
            list, default=None, help="the old callable's parameters: positional become keywords"
        ),
    }

    def validate(self, fields):
        if fields["device"] is not None and not is_identifier(fields["device"]):
            return f"'device' must be a Python identifier, not {fields['device']!r}"
        if fields["parameters"] is not None and not all(is_identifier(p) for p in fields["parameters"]):
            return "'parameters' must be a list of parameter names"
        if fields["called_only"] and not fields["tip"]:
            return "'called_only' needs a 'tip' (what to do where a reference keeps the name)"
        return check_names(new_name=fields["new_name"])

    def compile(self, rule, index):
        index.names[rule["old_name"]] = NameTarget(
            rule["new_name"], rule.id, "function", tip=rule["tip"], called_only=rule["called_only"]
        )
        index.add_call_edit(rule["old_name"], rule, _pass_the_device)

    def trigger_names(self, rule):
        return {rule["old_name"]}

    def describe(self, rule):
        device = f"{rule['device']}, " if rule["device"] else ""
        return f"{rule['old_name']}(...) -> {rule['new_name']}({device}...)"

    def subject(self, rule):
        return name_subject(rule["old_name"])


def _pass_the_device(rule, call: cst.Call, ctx) -> cst.Call:
    root, _, rest = rule["new_name"].partition(".")
    if root in ctx.index.bindings and not isinstance(call.func, cst.Attribute):
        # a name imported from CUDA (GradScaler): its import cannot come from a bound name, the call can
        new = dotted_expression(f"{ctx.bound_name(root)}.{rest}")
        ctx.record("MODIFY", f"call {ctx.code(new)} instead of {ctx.code(call.func)}", rule.id)
        call = call.with_changes(func=new)
    if rule["parameters"] is not None:
        call = _positional_as_keywords(rule, call, ctx)
    if rule["device"] is None:
        return call
    name = ctx.bound_name(rule["device"])
    ctx.record("MODIFY", f"pass {name} to {rule['new_name']} as its device type", rule.id)
    first = cst.Arg(cst.Name(name), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    if not call.args:
        first = first.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=[first, *call.args])


def _positional_as_keywords(rule, call: cst.Call, ctx) -> cst.Call:
    """``autocast(amp)`` -> ``autocast(enabled=amp)``: the new callable takes another argument in
    that place. Arguments passed through ``*args`` cannot be named: reported."""
    parameters = rule["parameters"]
    args = list(call.args)
    for position, arg in enumerate(args):
        if arg.keyword is not None or arg.star == "**":
            break
        if arg.star == "*" or position >= len(parameters):
            tip = f"positional arguments through *args: pass them by keyword ({', '.join(parameters)})"
            ctx.keep(rule["old_name"], rule.id, works=False, tip=tip)
            break
        keyword = parameters[position]
        args[position] = arg.with_changes(
            keyword=cst.Name(keyword),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        )
        ctx.record("MODIFY", f"pass {ctx.code(arg.value)} to {rule['new_name']} as {keyword}=", rule.id)
    return call.with_changes(args=args)
