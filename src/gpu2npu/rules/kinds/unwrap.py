"""UnwrapModelRule: a wrapper the NPU does not support is replaced by the model it wraps, as the
Ascend porting guide does by hand for ``torch.nn.DataParallel``
(``model = torch.nn.DataParallel(model).cuda()`` -> ``model = model.npu()``): one NPU runs it.

The wrapper's own attribute (``attribute``, ``module`` for DataParallel) would be gone, so a file
that reads it (``model.module.state_dict()``) keeps the call, reported with ``tip``; a read that
only happens when the object has the attribute (``m.module if hasattr(m, 'module') else m``,
or behind ``isinstance(m, DataParallel)``) is no such read (gpu2npu.rewrite.wrappers decides).
So is a call in a function whose result another file reads the attribute of (pix2pixHD's
``create_model`` returns the wrapper; train.py reads ``model.module.save``), with ``returned_tip``,
and a call assigned to an object's attribute another file reads the wrapper's attribute through
(mmf: ``self.model = DataParallel(self.model)``; checkpoint.py reads ``self.trainer.model.module``),
with ``attribute_tip``.
The wrapped model is the ``arg_idx``-th positional argument or the ``arg_keyword`` one. Where
the project loads a state dict (``net.load_state_dict(checkpoint['net'])``, pytorch-cifar's
``--resume``; score_sde's in another file), a checkpoint the original saved through the wrapper
has its attribute's prefix (``module.``) on every key, which the model alone does not load:
reported with ``checkpoint_tip``
(not in the distributed mode's main script, whose DistributedDataParallel gives the keys the same
prefix again). The wrapper moved each call's tensors to the device; where a call of the model gets
one the script never moved (DeepSDF's loader batches), the replacement is reported with
``inputs_tip`` (gpu2npu.rewrite.moved_inputs). A class deriving from the wrapper (EfficientDet's
``CustomDataParallel(nn.DataParallel)``) is no call to replace: it is reported with ``subclass_tip``.

    rules:
      UnwrapModelRule:
        - {id: G2N730, func_name: torch.nn.DataParallel, attribute: module, tip: "..."}
"""

from __future__ import annotations

import re

import libcst as cst

from gpu2npu.rules.index import KeptWrapper
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_identifier, last
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import find_argument

LOADS_STATE = re.compile(r"\.load_state_dict\s*\(")


class UnwrapModel(RuleKind):
    name = "UnwrapModelRule"
    fields = {
        "func_name": Field(str, required=True, dotted=True, help="qualified name of the wrapper"),
        "arg_idx": Field(int, default=0, help="position of the wrapped model"),
        "arg_keyword": Field(str, default="module", help="keyword of the wrapped model"),
        "attribute": Field(str, default="module", help="the wrapper's attribute that holds the model"),
        "tip": Field(str, required=True, help="what to do where the call is kept"),
        "checkpoint_tip": Field(
            str, default="", help="what to do where the file also loads a state dict the wrapper saved"
        ),
        "returned_tip": Field(
            str,
            default="",
            help="what to do where another file reads the attribute of what a function returns",
        ),
        "inputs_tip": Field(
            str,
            default="",
            help="what to do where the model gets tensors only the wrapper moved; may name {call}, {line}",
        ),
        "subclass_tip": Field(
            str, default="", help="what to do where a class derives from the wrapper (kept, unsupported)"
        ),
        "attribute_tip": Field(
            str,
            default="",
            help="what to do where another file reads the attribute through the object attribute set to it",
        ),
    }

    def validate(self, fields):
        if not is_identifier(fields["attribute"]) or not is_identifier(fields["arg_keyword"]):
            return "'attribute' and 'arg_keyword' must be identifiers"
        try:
            fields["inputs_tip"].format(call="", line="")
        except (KeyError, IndexError, ValueError) as error:
            return f"'inputs_tip' may only name {{call}} and {{line}}: {error}"
        return check_names(func_name=fields["func_name"])

    def compile(self, rule, index):
        index.add_call_edit(rule["func_name"], rule, self.apply)
        index.replaced_apis.add(rule["func_name"])
        index.kept_wrappers[rule["func_name"]] = KeptWrapper(
            rule["attribute"],
            rule.id,
            rule["returned_tip"] or rule["tip"],
            rule["inputs_tip"],
            rule["subclass_tip"],
            rule["attribute_tip"] or rule["returned_tip"] or rule["tip"],
        )

    def trigger_words(self, rule):
        return {last(rule["func_name"])}

    def describe(self, rule):
        return f"{rule['func_name']}(model) -> model, unless the file reads .{rule['attribute']}"

    def subject(self, rule):
        return rule["func_name"]

    def apply(self, rule, call: cst.Call, ctx) -> cst.BaseExpression:
        position = find_argument(call, rule["arg_idx"], rule["arg_keyword"])
        if position is None or call.args[position].star:
            return call
        model = call.args[position].value
        message = (
            f"replace {rule['func_name']}({ctx.code(model)}) with the model it wraps: one NPU runs it "
            "(several: the distributed mode)"
        )
        ctx.record("MODIFY", message, rule.id)
        # the distributed mode wraps the main script's model again (DistributedDataParallel: the same prefix)
        rewrapped = ctx.index.distributed is not None and ctx.is_entry_script
        loads = ctx.project.loads_state_dicts or LOADS_STATE.search(ctx.source)  # here or elsewhere
        if rule["checkpoint_tip"] and not rewrapped and loads:
            ctx.keep(rule["func_name"], rule.id, tip=rule["checkpoint_tip"])  # its keys carry the wrapper's
        return model
