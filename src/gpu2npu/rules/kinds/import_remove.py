"""RemoveImportRule: delete an import of a module that has no NPU build (``import amp_C``,
NVIDIA apex's CUDA kernels). Only that name is dropped from a multi-name import; a block left
empty gets ``pass``; comments above a removed line are kept."""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names
from gpu2npu.rules.model import Field


class RemoveImport(RuleKind):
    name = "RemoveImportRule"
    fields = {
        "module": Field(str, required=True, dotted=True, help="module whose import is removed, e.g. amp_C"),
    }

    def validate(self, fields):
        return check_names(module=fields["module"])

    def compile(self, rule, index):
        index.remove_imports[rule["module"]] = rule.id

    def trigger_words(self, rule):
        return {rule["module"]}

    def describe(self, rule):
        return f"remove 'import {rule['module']}'"

    def subject(self, rule):
        return rule["module"]
