"""DistributedDataParallelRule (msFmkTransplt's name), for ``distributed -m MAIN -t MODEL``: in the
main script, MODEL (or each of several, ``-t netG,netD``) is wrapped once, after the first
statement that moves it to the device, and its ``module_methods`` calls after that point go
through ``.module``, as do its attributes that are not ``wrapper_members`` (the wrapper's own:
``model.hyperparams``, a submodule ``model.encoder`` or a method of the model's class would raise
AttributeError on the wrapper). Where the script wraps MODEL in one of ``replaces``
(DataParallel), the wrap takes that wrapper's place (the model ``move``d to the device first): the
same ``.module`` and checkpoint keys, so nothing else changes. A script that calls one of
``setups`` (its own process group or DDP, DeepSpeed, Lightning, Accelerate, FSDP) is distributed
already and left alone. The pass is gpu2npu.rewrite.distributed; its tips may name ``{model}`` (the
model) and, ``already``, ``{setup}`` (the set-up call found).

    rules:
      DistributedDataParallelRule:
        - id: G2N741
          wrapper: "torch.nn.parallel.DistributedDataParallel({model}, device_ids=[LOCAL_RANK])"
          setups: [torch.distributed.init_process_group, torch.nn.parallel.DistributedDataParallel]
          module_methods: [state_dict, load_state_dict]
          wrapper_members: [module, parameters, train, eval, no_sync, ...]
          replaces: [torch.nn.DataParallel]
          move: "{model}.npu()"
          tips: {already: "... {setup} ...", no_move: "...", inferred: "... {model} ...",
                 unwrapped: "... {model} ...", function: "...", rebound: "..."}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import (
    check_names,
    is_expression,
    is_identifier,
    listed_names,
    shortened,
    tips_problem,
)
from gpu2npu.rules.model import Field

TIPS = ("already", "no_move", "inferred", "unwrapped", "function", "rebound", "returned")
# situations a rule file may give a tip for; without one, the situation gets no row (rule files
# written before it stay valid)
OPTIONAL_TIPS = ("module_call",)


class DistributedModel(RuleKind):
    name = "DistributedDataParallelRule"
    fields = {
        "wrapper": Field(str, required=True, help="the wrapping call, {model} standing for the model"),
        "setups": Field(list, default=[], help="calls that mean the script is distributed already"),
        "module_methods": Field(list, default=[], help="model methods called through .module after it"),
        "wrapper_members": Field(
            list, default=[], help="the wrapper's attributes; others go through .module"
        ),
        "replaces": Field(list, default=[], help="wrappers of the model the wrap takes the place of"),
        "move": Field(str, default="", help="the model moved to the device, {model} standing for it"),
        "tips": Field(
            dict,
            required=True,
            help="what to do: " + ", ".join(TIPS) + "; optional: " + ", ".join(OPTIONAL_TIPS),
        ),
    }
    text_only = True

    def validate(self, fields):
        if "{model}" not in fields["wrapper"] or not is_expression(fields["wrapper"].replace("{model}", "m")):
            return f"'wrapper' must be a call with {{model}} in it, not {shortened(fields['wrapper'])}"
        if any(not is_identifier(str(m)) for m in fields["module_methods"]):
            return "'module_methods' must be method names"
        if any(not is_identifier(str(m)) for m in fields["wrapper_members"]):
            return "'wrapper_members' must be attribute names"
        if fields["move"] and (
            "{model}" not in fields["move"] or not is_expression(fields["move"].replace("{model}", "m"))
        ):
            return f"'move' must be an expression with {{model}} in it, not {shortened(fields['move'])}"
        names = {**listed_names("setups", fields["setups"]), **listed_names("replaces", fields["replaces"])}
        problem = check_names(**names) or tips_problem(fields["tips"], TIPS)
        return problem or _placeholder_problem(fields["tips"])

    def compile(self, rule, index):
        plan = index.distributed_plan()
        plan.wrapper = rule["wrapper"]
        plan.wrapper_rule = rule.id
        plan.setups = frozenset(rule["setups"])
        plan.module_methods = frozenset(rule["module_methods"])
        plan.wrapper_members = frozenset(rule["wrapper_members"])
        plan.replaces = frozenset(rule["replaces"])
        plan.move = rule["move"]
        plan.tips.update(rule["tips"])

    def describe(self, rule):
        return f"main script: the model -> {rule['wrapper']} after it is moved to the device"


def _placeholder_problem(tips: dict):
    """A problem message unless every tip names no placeholder but ``{model}`` and ``{setup}``."""
    for situation in TIPS + tuple(name for name in OPTIONAL_TIPS if name in tips):
        try:
            tips[situation].format(model="m", setup="s")
        except (KeyError, IndexError, ValueError, AttributeError):
            return (
                f"'tips' {situation}: the placeholders are {{model}} and {{setup}} (write {{{{ for a brace)"
            )
    return None
