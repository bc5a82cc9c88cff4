"""DeviceIdArgRule: a device argument takes the index from the environment (msFmkTransplt's
``-s``), without the reference's bug B21 (CPU devices forced onto the NPU).

``arg_new`` says what the argument becomes: ``device`` (``f'npu:{DEVICE_ID}'``), ``index``
(``DEVICE_ID``) or ``delete`` (``.cuda(0)`` -> ``.npu()``: the inserted statements select the
device); the name and device type are the InsertDeviceIdRule's. ``values`` says which arguments
change: ``indexed`` only a fixed index (an int literal, ``'npu:1'``), ``any`` every value. A
call with a CPU device among its arguments is left alone; a value that already comes from the
environment or a rank (``LOCAL_RANK``, ``os.environ``, ``args.local_rank``, or made of names the
file assigns from one of them: ``proc_id % num_gpus``) is left alone and reported with ``tip``; so
is a spawned worker's index (``mp.spawn(fn=distributed_main)``, ``distributed_main(i, ...)``:
``set_device(i)``, or a name assigned from ``i``; an attribute assigned from it, in any function
of the file: mmf's ``config.device_id = device_id``), each worker's own card.
A value made of a loop's variable (``for path, index in mapping.items():`` then
``torch.device(root.type, index)``) names one card per iteration, a model spread over cards: it is
left alone too and reported with ``loop_tip``. So is the device some data already lives on
(``set_device(points.device)``, mmcv's ``points_device``, T5's ``first_device`` from its device
map), reported with ``placed_tip``: that card follows the data, not the process. The current
device (``torch.cuda.current_device()``), or a name the file assigns from it (a card saved and
restored later), is the card selected already and stays, unreported. In a file that
sets the visible cards in Python (ijepa, yolov7), every device stays, reported with ``mask_tip``:
the process numbers the cards the mask leaves it from 0, so the index from the environment may
name a card it cannot see.

    rules:
      DeviceIdArgRule:
        - {id: G2N726, func_name: torch.cuda.set_device, arg_idx: 0, arg_new: index, values: any}
"""

from __future__ import annotations

import re

import libcst as cst

from gpu2npu.rules.kinds._common import (
    ARGUMENT_FIELDS,
    CallArgumentKind,
    argument_label,
    argument_place,
    assigned_values,
    dotted_name,
    method_word,
    name_subject,
)
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import delete_argument, replace_value
from gpu2npu.source.torch_names import FROM_ENVIRONMENT, names_several_cards

NEW_VALUES = ("device", "index", "delete")
VALUES = ("indexed", "any")
ROOT_NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")
INDEXED_DEVICE = re.compile(r"^(?:cuda|npu):[0-9]+$")  # another accelerator's (xpu:0) is none of ours
CPU_DEVICE = re.compile(r"^cpu(:[0-9]+)?$")
# The card the process selected already (sd-scripts' torch.cuda.device(torch.cuda.current_device())).
CURRENT_DEVICE = re.compile(r"\bcurrent_device\(\s*\)\s*$")
# Where data already lives: a tensor's or module's device, or a card of a model's device map.
PLACED = re.compile(r"\.device(\.index)?\s*$|\.get_device\(\s*\)\s*$|\bdevice_map\b")


class DeviceIdArg(CallArgumentKind):
    name = "DeviceIdArgRule"
    fields = {
        **ARGUMENT_FIELDS,
        "arg_new": Field(str, required=True, help="device, index or delete"),
        "values": Field(str, default="indexed", help="indexed (a fixed index) or any"),
        "tip": Field(str, required=True, help="what to do where a value from the environment stays"),
        "loop_tip": Field(str, default="", help="what to do where a loop's variable (a card each) stays"),
        "placed_tip": Field(str, default="", help="what to do where the device of placed data stays"),
        "mask_tip": Field(str, default="", help="what to do where the file sets the visible cards"),
    }

    def validate(self, fields):
        if fields["arg_new"] not in NEW_VALUES:
            return f"'arg_new' must be one of {', '.join(NEW_VALUES)}, not {fields['arg_new']!r}"
        if fields["values"] not in VALUES:
            return f"'values' must be one of {', '.join(VALUES)}, not {fields['values']!r}"
        return super().validate(fields)

    def trigger_words(self, rule):
        return method_word(rule["func_name"], f".{rule['func_name']}(")

    def trigger_names(self, rule):
        return dotted_name(rule["func_name"])

    def describe(self, rule):
        which = "a fixed index" if rule["values"] == "indexed" else "any value"
        action = {
            "device": "-> the device of DEVICE_ID",
            "index": "-> DEVICE_ID",
            "delete": "deleted (DEVICE_ID's device is selected)",
        }[rule["arg_new"]]
        return f"{rule['func_name']}({argument_place(rule)}): {which} {action}"

    def edit(self, rule, call: cst.Call, position: int, ctx) -> cst.Call:
        block = ctx.device_block
        value = call.args[position].value
        if block is None or any(_is_cpu(arg.value) for arg in call.args):
            return call
        code = ctx.code(value)
        if _reads_name(code, block.name) or CURRENT_DEVICE.search(code):
            return call  # already the index from the environment, or the card selected already
        if _assigned_from(ctx.source, code, CURRENT_DEVICE):
            return call  # a card saved before and restored (ms-swift: set_device(expected_device))
        if rule["values"] == "indexed" and (not _is_indexed(value) or names_several_cards(ctx.source)):
            return call  # several cards by number: DeviceIdStringRule reports them
        if ctx.facts.narrows_visible_devices:  # the process numbers the cards the mask leaves it from 0
            if not (isinstance(value, cst.SimpleString) and _is_indexed(value)):  # DeviceIdStringRule's
                ctx.keep(name_subject(rule["func_name"]), rule.id, tip=rule["mask_tip"] or rule["tip"])
            return call
        if FROM_ENVIRONMENT.search(code) or _assigned_from(ctx.source, code, FROM_ENVIRONMENT):
            ctx.keep(name_subject(rule["func_name"]), rule.id)
            return call
        process = ctx.process_index()
        if process is not None and (
            process in _roots(code) or _assigned_from(ctx.source, code, _word(process))
        ):
            ctx.keep(name_subject(rule["func_name"]), rule.id)  # a spawned worker's card: its rank
            return call
        if "." in code and any(_assigned_from(ctx.source, code, _word(i)) for i in ctx.spawned_indices()):
            ctx.keep(name_subject(rule["func_name"]), rule.id)  # mmf's config.device_id = device_id
            return call
        if ctx.facts.loop_variables & _roots(code):
            ctx.keep(name_subject(rule["func_name"]), rule.id, tip=rule["loop_tip"] or rule["tip"])
            return call
        if _names_placed_data(code, ctx):
            ctx.keep(name_subject(rule["func_name"]), rule.id, tip=rule["placed_tip"] or rule["tip"])
            return call
        where = argument_label(call.args[position], rule)
        if rule["arg_new"] == "delete":
            ctx.record("DELETE", f"delete the arg {where} of function {rule['func_name']} (-s)", rule.id)
            return delete_argument(call, position)
        new_code = block.device_string if rule["arg_new"] == "device" else block.name
        message = f"change the arg {where} of function {rule['func_name']} to {new_code}"
        ctx.record("MODIFY", message, rule.id)
        return replace_value(call, position, cst.parse_expression(new_code))


def _assigned_from(source: str, code: str, origin: "re.Pattern[str]", depth: int = 2) -> bool:
    """A name (or attribute) the file assigns from what ``origin`` finds somewhere (the
    environment or a rank: ``device = f'cuda:{ddp_local_rank}'`` then ``set_device(device)``; a
    spawned worker's index: ``cfg.device_id = i``), or an expression of names one of which it
    assigns so (``proc_id % num_gpus``, ``proc_id`` from SLURM_PROCID); followed through one more
    assignment (Accelerate's ``self.device = torch.device("cuda", device_index)``, the index
    computed from its local rank)."""
    names = [code] if all(part.isidentifier() for part in code.split(".")) else sorted(_roots(code))
    values = [value for name in names for value in assigned_values(source, name)]
    if any(origin.search(value) for value in values):
        return True
    return depth > 1 and any(
        _assigned_from(source, root, origin, depth - 1)
        for value in values
        for root in sorted(_roots(value) - set(names))
    )


def _names_placed_data(code: str, ctx) -> bool:
    """``x.device`` (or its ``.index``), ``x.get_device()``, or a name the file assigns from one of
    them or from a device map. An option (``args.device``) names the process's card instead, and so
    does an attribute the file sets to something else (a trainer's ``self.device = torch.device(...)``)."""
    if code.split(".", 1)[0] in ctx.facts.namespaces:
        return False
    if not all(part.isidentifier() for part in code.split(".")):
        return bool(PLACED.search(code))  # x.get_device(), next(model.parameters()).device
    values = assigned_values(ctx.source, code)
    if values:
        return any(PLACED.search(value) for value in values)
    return code.endswith((".device", ".device.index"))  # mamba's torch.cuda.device(x.device.index)


def _word(name: str) -> "re.Pattern[str]":
    """``name`` read as a variable (not an attribute or part of a longer name)."""
    return re.compile(rf"(?<![.\w]){re.escape(name)}\b")


def _roots(code: str) -> set:
    """The names an expression reads (not attributes: ``args`` of ``args.gpu``)."""
    return set(ROOT_NAME.findall(code))


def _is_indexed(value: cst.BaseExpression) -> bool:
    """A fixed device index: ``0``, ``'npu:1'``."""
    if isinstance(value, cst.Integer):
        return True
    return isinstance(value, cst.SimpleString) and bool(INDEXED_DEVICE.match(str(value.evaluated_value)))


def _is_cpu(value: cst.BaseExpression) -> bool:
    """``'cpu'``, or a call such as ``torch.device('cpu')`` whose first argument is."""
    if isinstance(value, cst.Call) and value.args:
        value = value.args[0].value
    return isinstance(value, cst.SimpleString) and bool(CPU_DEVICE.match(str(value.evaluated_value)))


def _reads_name(code: str, name: str) -> bool:
    """Whether ``code`` reads the variable ``name``: not a key (``config["DEVICE_ID"]``, SRGAN's
    card 0 from its config) nor an attribute (``args.DEVICE_ID``) spelled the same."""
    return re.search(rf"(?<![\w.'\"]){re.escape(name)}(?![\w'\"])", code) is not None
