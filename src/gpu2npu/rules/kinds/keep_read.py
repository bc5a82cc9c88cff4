"""KeepReadRule: a call stays on CUDA where the program reads a field of its result that the
NPU counterpart does not give (``torch.cuda.get_device_properties(i).major``: the NPU's
properties have no usable ``major``/``minor``). The read is seen directly on the call or through
a name the same function binds to the result (``p = ...; p.major``). On NPU the kept CUDA call
runs only where the program tested ``torch.cuda.is_available()`` (a test before it is kept too).

    rules:
      KeepReadRule:
        - {id: G2N091, call: torch.cuda.get_device_properties, reads: [major, minor], tip: "..."}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, listed_names
from gpu2npu.rules.model import Field


class KeepRead(RuleKind):
    name = "KeepReadRule"
    fields = {
        "call": Field(str, required=True, dotted=True, help="qualified name of the call"),
        "reads": Field(list, required=True, help="attributes of its result that keep it on CUDA"),
        "tip": Field(str, required=True, help="what to do about a call that is kept"),
    }

    def validate(self, fields):
        return check_names(call=fields["call"], **listed_names("reads", fields["reads"]))

    def compile(self, rule, index):
        index.kept_reads[rule["call"]] = (frozenset(rule["reads"]), rule.id)

    def describe(self, rule):
        return f"keep {rule['call']} where its {', '.join(rule['reads'])} is read"

    def subject(self, rule):
        return rule["call"]
