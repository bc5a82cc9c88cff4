"""GateReportRule: a qualified name read where it decides something is reported with what to do,
and left as it is (``torch.version.cuda``: None on every torch_npu host, so ``if
torch.version.cuda:`` or ``bf16 = torch.version.cuda and ...`` silently takes the branch of a
machine without CUDA). It decides in the test of an ``if``, ``while``, ``assert``, conditional
expression or comprehension filter, as an operand of ``and``, ``or``, ``not`` and in a
comparison; a read that is only shown (``print(torch.version.cuda)``) is not reported.

    rules:
      GateReportRule:
        - {id: G2N187, name: torch.version.cuda, tip: "...", category: limited}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names
from gpu2npu.rules.kinds._reported import report_problem
from gpu2npu.rules.model import Field


class GateReport(RuleKind):
    name = "GateReportRule"
    fields = {
        "name": Field(str, required=True, dotted=True, help="qualified name, e.g. torch.version.cuda"),
        "tip": Field(str, required=True, help="what to do where it decides"),
        "category": Field(str, default="limited", help="unsupported, limited, unknown or mention"),
    }

    def validate(self, fields):
        return check_names(name=fields["name"]) or report_problem(fields)

    def compile(self, rule, index):
        index.file_rules.setdefault(self.name, []).append(rule)  # read by the Python kind's reports
        index.build_gates.add(rule["name"])  # a CUDA test for the code behind it (KeepGuardRule)

    def describe(self, rule):
        return f"report {rule['name']} where it decides a branch"

    def subject(self, rule):
        return rule["name"]
