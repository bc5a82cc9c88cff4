"""MoveToDeviceRule: ``x.cuda(...)`` on any receiver becomes a move to the bound device type:
``x.cuda()`` -> ``x.to(DEVICE_TYPE)``, ``x.cuda(i)`` -> ``x.to(torch.device(DEVICE_TYPE, i))``,
``non_blocking`` and ``memory_format`` kept as keywords (``Tensor.to`` and ``Module.to`` take
them; a receiver named like a storage gets ``device=``, the only way its ``to`` takes it). Not
where the receiver is an object of a project class that defines the method itself.

    rules:
      MoveToDeviceRule:
        - {id: G2N915, method: cuda, device: DEVICE_TYPE}
"""

from typing import Optional

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import is_identifier, name_subject
from gpu2npu.rules.model import Field

# Tensor.cuda(device=None, non_blocking=False, memory_format=...): the positions after the device
POSITIONAL_AFTER_DEVICE = ("non_blocking",)


class MoveToDevice(RuleKind):
    name = "MoveToDeviceRule"
    fields = {
        "method": Field(str, required=True, help="the method, e.g. cuda"),
        "device": Field(str, required=True, help="the bound device type name, e.g. DEVICE_TYPE"),
    }

    def validate(self, fields):
        for key in ("method", "device"):
            if not is_identifier(fields[key]):
                return f"'{key}' must be a Python identifier, not {fields[key]!r}"
        return None

    def compile(self, rule, index):
        index.add_call_edit("." + rule["method"], rule, _move)

    def trigger_words(self, rule):
        return {f".{rule['method']}("}

    def describe(self, rule):
        return f".{rule['method']}(...) -> .to({rule['device']}, ...) on any receiver"

    def subject(self, rule):
        return name_subject(rule["method"])


def _move(rule, call: cst.Call, ctx) -> cst.Call:
    func = call.func
    if not isinstance(func, cst.Attribute) or ctx.defined_by_project(func, rule["method"]):
        return call
    arguments = _arguments(call)
    if arguments is None:
        return call  # *args, **kwargs or an unknown keyword: what moves where is not known
    index, keywords = arguments
    device = cst.Name(ctx.bound_name(rule["device"]))
    if isinstance(index, cst.BaseString) or (isinstance(index, cst.Name) and index.value == device.value):
        device, index = index, None  # .cuda('cuda:1'), its literal rewritten already: a device
    elif index is not None and ctx.facts.is_int(ctx.code(index), ctx.line()) is False:
        device, index = index, None  # a torch.device or a device name (pytorch/examples' imagenet)
    if index is not None:
        ctx.absolute_name_used("torch")
        device = cst.Call(
            cst.Attribute(cst.Name("torch"), cst.Name("device")),
            [cst.Arg(device, comma=_comma()), cst.Arg(index)],
        )
    # a storage's to() takes its device by keyword only (storage.cuda(dev) in map_location)
    keyword = cst.Name("device") if "storage" in ctx.code(func.value).lower() else None
    equal = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")) if keyword else None
    args = [
        cst.Arg(
            device,
            keyword=keyword,
            equal=equal or cst.MaybeSentinel.DEFAULT,
            comma=_comma() if keywords else cst.MaybeSentinel.DEFAULT,
        )
    ]
    for number, (name, value) in enumerate(keywords):
        last = number == len(keywords) - 1
        args.append(
            cst.Arg(
                value,
                keyword=cst.Name(name),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                comma=cst.MaybeSentinel.DEFAULT if last else _comma(),
            )
        )
    new = call.with_changes(func=func.with_changes(attr=cst.Name("to")), args=args)
    ctx.record("MODIFY", f"change .{rule['method']}(...) to .to({ctx.code(args[0].value)}, ...)", rule.id)
    return new


def _arguments(call: cst.Call) -> Optional[tuple]:
    """(the device index expression or None, [(keyword, value)]), or None when unsure."""
    index = None
    keywords = []
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in call.args) or len(positional) > 1 + len(POSITIONAL_AFTER_DEVICE):
        return None
    if positional:
        index = positional[0].value
        keywords += list(zip(POSITIONAL_AFTER_DEVICE, [arg.value for arg in positional[1:]]))
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "device":
            index = arg.value
        elif arg.keyword.value in ("non_blocking", "memory_format"):
            keywords.append((arg.keyword.value, arg.value))
        else:
            return None
    return index, keywords


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
