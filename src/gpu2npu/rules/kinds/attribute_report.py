"""AttributeReportRule: an attribute read on any receiver that no rewrite can make right in every
program, reported with what to do and left as it is (``x.is_cuda`` in a portable tree: False for
an NPU tensor, and the receiver may be the project's own object). Reads that a KeepGuardRule keeps
are reported by that rule; a module that assigns the attribute itself defines it and is left alone.
With ``used_with``, only on what a call of one of those names makes (bound by ``with ... as``, an
assignment, or a handler's first parameter): ``prof.key_averages()`` where ``prof`` is
torch.profiler.profile's, which the migration turns into torch_npu's profiler.

    rules:
      AttributeReportRule:
        - {id: G2N980, attribute: is_cuda, tip: "...", category: limited}
        - {id: G2N989, attribute: key_averages, used_with: [torch.profiler.profile], tip: "..."}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, listed_names
from gpu2npu.rules.kinds._reported import report_problem
from gpu2npu.rules.model import Field


class AttributeReport(RuleKind):
    name = "AttributeReportRule"
    fields = {
        "attribute": Field(str, required=True, help="the attribute, e.g. is_cuda"),
        "tip": Field(str, required=True, help="what to do where it is read"),
        "category": Field(str, default="limited", help="unsupported, limited, unknown or mention"),
        "used_with": Field(list, default=(), help="only on objects calls of these make"),
    }

    def validate(self, fields):
        if "." in fields["attribute"]:
            return f"'attribute' is one name without dots, not {fields['attribute']!r}"
        return check_names(
            attribute=fields["attribute"], **listed_names("used_with", fields["used_with"])
        ) or report_problem(fields)

    def compile(self, rule, index):
        index.file_rules.setdefault(self.name, []).append(rule)  # read by the Python kind's reports

    def describe(self, rule):
        return f"report reads of .{rule['attribute']}"

    def subject(self, rule):
        return rule["attribute"]
