"""FuncNameModifyRule (msFmkTransplt): rename a function.

A dotted ``old_name`` is a fully qualified name and is renamed wherever it is referenced (the
reference tool renamed call sites only, so ``f = torch.cuda.is_available`` kept CUDA). A
dot-free ``old_name`` is a method called on any receiver, as in the reference
(``x.cuda()`` -> ``x.npu()``), except on classes of the project that define it themselves.
"""

from gpu2npu.rules.index import NameTarget, Rename
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import (
    check_names,
    dotted_name,
    is_identifier,
    last,
    method_word,
    name_subject,
    parent,
)
from gpu2npu.rules.model import Field


class FuncNameModify(RuleKind):
    name = "FuncNameModifyRule"
    fields = {
        "old_name": Field(str, required=True, help="qualified function name, or a method name"),
        "new_name": Field(str, required=True, help="new qualified name (or new last name)"),
        "replace_module": Field(
            bool, default=False, help="replace the whole dotted callee, not just its last name"
        ),
    }

    def validate(self, fields):
        problem = check_names(old_name=fields["old_name"], new_name=fields["new_name"])
        if problem:
            return problem
        if "." not in fields["old_name"] and not is_identifier(last(fields["new_name"])):
            return "a method rename needs a plain new_name"
        return None

    def compile(self, rule, index):
        if "." in rule["old_name"]:
            index.names[rule["old_name"]] = NameTarget(target_name(rule.fields), rule.id, "function")
        else:
            index.methods[rule["old_name"]] = Rename(last(rule["new_name"]), rule.id, "function")

    def trigger_words(self, rule):
        return method_word(rule["old_name"], "." + rule["old_name"])

    def trigger_names(self, rule):
        return dotted_name(rule["old_name"])

    def describe(self, rule):
        old, new = rule["old_name"], rule["new_name"]
        return f"{old} -> {new}" if "." in old else f".{old}(...) -> .{last(new)}(...) on any receiver"

    def subject(self, rule):
        return name_subject(rule["old_name"])


def target_name(fields) -> str:
    old, new = fields["old_name"], fields["new_name"]
    if fields["replace_module"] or "." in new:
        return new
    return f"{parent(old)}.{new}"
