"""MethodRenameRule: a method called on any receiver is renamed (``x.cuda(...)`` ->
``x.npu(...)``), except where the receiver is an object of a project class that defines the
method itself (``self.cuda()`` inside such a class, or ``net.cuda()`` after ``net = Net()``)."""

from gpu2npu.rules.index import Rename
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import is_identifier, last, name_subject
from gpu2npu.rules.model import Field


class MethodRename(RuleKind):
    name = "MethodRenameRule"
    fields = {
        "old_name": Field(str, required=True, help="method name, e.g. cuda"),
        "new_name": Field(str, required=True, help="new method name, e.g. npu"),
    }

    def validate(self, fields):
        for key in ("old_name", "new_name"):
            if not is_identifier(fields[key]):
                return f"'{key}' must be a method name without dots, not {fields[key]!r}"
        return None

    def compile(self, rule, index):
        index.methods[rule["old_name"]] = Rename(rule["new_name"], rule.id, "function")

    def trigger_words(self, rule):
        return {"." + rule["old_name"]}

    def describe(self, rule):
        return f".{rule['old_name']}(...) -> .{last(rule['new_name'])}(...) on any receiver"

    def subject(self, rule):
        return name_subject(rule["old_name"])
