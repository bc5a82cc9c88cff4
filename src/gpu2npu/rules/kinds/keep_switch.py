"""KeepSwitchRule: a CUDA test given to a library's CUDA switch stays a CUDA test and is
reported as a limit. mergekit's ``MergeOptions(cuda=torch.cuda.is_available())`` makes mergekit
compute on ``"cuda"`` where the value is True; rewritten to the NPU's test it would be True on
an NPU host, and the library's CUDA calls fail there. Kept, the library computes on the CPU, as
on any machine without CUDA. A local name bound to the test counts where the switch is all that
reads it.

    rules:
      KeepSwitchRule:
        - {id: G2N378, func_names: [mergekit.merge.MergeOptions], keyword: cuda, tip: "..."}
"""

import re

from gpu2npu.rules.index import CudaSwitch
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_identifier, last, listed_names
from gpu2npu.rules.model import Field


class KeepSwitch(RuleKind):
    name = "KeepSwitchRule"
    fields = {
        "func_names": Field(list, required=True, help="qualified names of the library's callables"),
        "keyword": Field(str, required=True, help="the keyword that switches the library to CUDA"),
        "tip": Field(str, required=True, help="what to do about a test that is kept"),
    }

    def validate(self, fields):
        if not is_identifier(fields["keyword"]):
            return f"'keyword' must be a Python identifier, not {fields['keyword']!r}"
        return check_names(**listed_names("func_names", fields["func_names"]))

    def compile(self, rule, index):
        index.cuda_switches.append(CudaSwitch(frozenset(rule["func_names"]), rule["keyword"], rule.id))

    def triggers(self, rule):
        """The keyword given, in a file naming one of the callables."""
        callees = "|".join(sorted({re.escape(last(name)) for name in rule["func_names"]}))
        return {(rf"\b(?:{callees})\b", rf"\b{re.escape(rule['keyword'])}\s*=")}

    def describe(self, rule):
        return f"keep the CUDA test given to {rule['keyword']}= of {', '.join(rule['func_names'])}"
