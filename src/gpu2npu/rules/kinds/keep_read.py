"""KeepReadRule: a call stays on CUDA where the program reads a field of its result that the
NPU counterpart does not give (``torch.cuda.get_device_properties(i).major``: the NPU's
properties have no usable ``major``/``minor``). The read is seen directly on the call or through
a name the same function binds to the result (``p = ...; p.major``). With ``passed_as``, it stays
too where the result (or such a name) is passed by one of those keywords to a call of a name
outside torch, which reads the field itself: vLLM's ``PyNcclCommunicator.broadcast(...,
stream=torch.cuda.current_stream())`` reads ``stream.cuda_stream``. On NPU the kept CUDA call runs
only where the program tested ``torch.cuda.is_available()`` (a test before it is kept too).

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
        "passed_as": Field(list, default=(), help="keywords of calls outside torch that read them too"),
    }

    def validate(self, fields):
        names = {**listed_names("reads", fields["reads"]), **listed_names("passed_as", fields["passed_as"])}
        return check_names(call=fields["call"], **names)

    def compile(self, rule, index):
        index.kept_reads[rule["call"]] = (frozenset(rule["reads"]), rule.id, frozenset(rule["passed_as"]))

    def describe(self, rule):
        return f"keep {rule['call']} where its {', '.join(rule['reads'])} is read"

    def subject(self, rule):
        return rule["call"]
