"""InsertEntryImportRule: an import at the top of every entry script of the project (after its
docstring and ``from __future__`` imports), as the automatic migration of the Ascend documents
asks (``import torch_npu`` and ``from torch_npu.contrib import transfer_to_npu`` in the script
that starts the training). Entry scripts are found by the project scan (``if __name__ ==
"__main__":`` or a module-level ``main()`` call, in a file no other file imports) or named with
``--entry``. Never twice: a script that already imports the module is left alone.

    rules:
      InsertEntryImportRule:
        - {id: G2N700, module: torch_npu}
        - {id: G2N701, module: torch_npu.contrib, names: [transfer_to_npu]}
"""

from gpu2npu.rules.index import EntryImport
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, listed_names
from gpu2npu.rules.model import Field


class InsertEntryImport(RuleKind):
    name = "InsertEntryImportRule"
    fields = {
        "module": Field(str, required=True, dotted=True, help="module to import, e.g. torch_npu"),
        "names": Field(list, default=[], help="names to import from it (from module import names)"),
    }
    text_only = True

    def validate(self, fields):
        return check_names(module=fields["module"], **listed_names("names", fields["names"]))

    def compile(self, rule, index):
        index.entry_imports.append(EntryImport(rule["module"], tuple(rule["names"]), rule.id))

    def trigger_words(self, rule):
        return set()  # entry scripts are chosen by the project scan, not by their text

    def describe(self, rule):
        statement = EntryImport(rule["module"], tuple(rule["names"]), rule.id).statement
        return f"insert '{statement}' at the top of the entry scripts"
