"""StringReportRule: a string literal that names something CUDA only, where no rewrite is right in
every program, reported with what to do and left as it is (``'torch.cuda.FloatTensor'`` in a
portable tree: ``torch.set_default_tensor_type`` and ``x.type(...)`` take it on CUDA alone, and
no one string names a tensor type of every device). Whole literals only; docstrings are prose.

    rules:
      StringReportRule:
        - {id: G2N982, texts: [torch.cuda.FloatTensor], tip: "...", category: unsupported}
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._reported import report_problem
from gpu2npu.rules.model import Field


class StringReport(RuleKind):
    name = "StringReportRule"
    fields = {
        "texts": Field(list, required=True, help="the literals' texts, e.g. torch.cuda.FloatTensor"),
        "tip": Field(str, required=True, help="what to do where one is written"),
        "category": Field(str, default="limited", help="unsupported, limited, unknown or mention"),
    }

    def validate(self, fields):
        texts = fields["texts"]
        if not texts or not all(isinstance(text, str) and text.strip() for text in texts):
            return "'texts' must list the literals' texts"
        return report_problem(fields)

    def compile(self, rule, index):
        index.file_rules.setdefault(self.name, []).append(rule)  # read by the Python kind's reports

    def describe(self, rule):
        return "report the literals " + ", ".join(repr(text) for text in rule["texts"])

    def subject(self, rule):
        return rule["texts"][0]
