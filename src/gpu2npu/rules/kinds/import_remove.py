"""RemoveImportRule: delete an import of a module that has no NPU build (``import amp_C``,
NVIDIA apex's CUDA kernels). Only that name is dropped from a multi-name import; a block left
empty gets ``pass``; comments above a removed line are kept. With ``only_unused`` (the default)
the import stays while the file still uses the name it binds: deleting it would turn the
ImportError that says what is missing into a NameError further down. Give the module an
ApiStatusRule (as rules/every_mode/cuda_only.yaml does) so that the import it keeps is reported."""

from gpu2npu.rules.index import ImportRemoval
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names
from gpu2npu.rules.model import Field


class RemoveImport(RuleKind):
    name = "RemoveImportRule"
    fields = {
        "module": Field(str, required=True, dotted=True, help="module whose import is removed, e.g. amp_C"),
        "only_unused": Field(bool, default=True, help="keep the import while the file uses the name"),
    }

    def validate(self, fields):
        return check_names(module=fields["module"])

    def compile(self, rule, index):
        index.remove_imports[rule["module"]] = ImportRemoval(rule.id, rule["only_unused"])

    def trigger_words(self, rule):
        return {rule["module"]}

    def describe(self, rule):
        when = " where nothing uses it" if rule["only_unused"] else ""
        return f"remove 'import {rule['module']}'{when}"

    def subject(self, rule):
        return rule["module"]
