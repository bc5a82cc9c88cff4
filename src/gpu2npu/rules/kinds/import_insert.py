"""InsertImportRule: ``import torch_npu`` right after the first real ``torch`` import at module
level (``import torch``, ``import torch.nn as nn``, ``from torch import ...``; not
``pytorch_lightning`` nor ``.torch_utils``), once per module, never inside a function or class,
and not at all when the file already imports torch_npu. With ``only_where_needed`` the import
goes only into files that need it: one another rule changes (it now uses the NPU) or one that
runs as a program (``if __name__ == "__main__":``, which loads the NPU for the modules it
imports); a model file with nothing to migrate stays as it is. The placement is the engine's
(gpu2npu.rewrite.imports)."""

from gpu2npu.rules.index import ImportInsertion
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names
from gpu2npu.rules.model import Field


class InsertImport(RuleKind):
    name = "InsertImportRule"
    fields = {
        "module": Field(str, required=True, dotted=True, help="module to import, e.g. torch_npu"),
        "after_module": Field(
            str, required=True, dotted=True, help="insert after the first import of this, e.g. torch"
        ),
        "only_where_needed": Field(bool, default=False, help="only in files changed otherwise, or programs"),
    }
    text_only = True  # a file only this kind triggers is edited as text, without libcst

    def validate(self, fields):
        return check_names(module=fields["module"], after_module=fields["after_module"])

    def compile(self, rule, index):
        insertion = ImportInsertion(rule["module"], rule["after_module"], rule.id, rule["only_where_needed"])
        index.insert_imports.append(insertion)

    def trigger_words(self, rule):
        return {rule["after_module"]}

    def describe(self, rule):
        where = " in files that need it" if rule["only_where_needed"] else ""
        return f"insert 'import {rule['module']}' after the first import of {rule['after_module']}{where}"
