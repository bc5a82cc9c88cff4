"""ReplaceAttributeRule (msFmkTransplt): a dotted ``old_name`` is a qualified name renamed in
every reference (``torch.profiler.ProfilerActivity.CUDA`` ->
``torch_npu.profiler.ProfilerActivity.NPU``); a dot-free one renames that attribute on any
receiver (``x.is_cuda`` -> ``x.is_npu``)."""

from gpu2npu.rules.index import NameTarget, Rename
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, dotted_name, method_word, name_subject, parent
from gpu2npu.rules.model import Field


class ReplaceAttribute(RuleKind):
    name = "ReplaceAttributeRule"
    fields = {
        "old_name": Field(str, required=True, help="qualified name, or an attribute name"),
        "new_name": Field(str, required=True, help="new qualified name, or new attribute name"),
    }

    def validate(self, fields):
        problem = check_names(old_name=fields["old_name"], new_name=fields["new_name"])
        if problem:
            return problem
        if "." not in fields["old_name"] and "." in fields["new_name"]:
            return "an attribute rename (dot-free old_name) needs a dot-free new_name"
        return None

    def compile(self, rule, index):
        old, new = rule["old_name"], rule["new_name"]
        if "." in old:
            target = new if "." in new else f"{parent(old)}.{new}"
            index.names[old] = NameTarget(target, rule.id, "attribute")
        else:
            index.attributes[old] = Rename(new, rule.id, "attribute")

    def trigger_words(self, rule):
        return method_word(rule["old_name"], "." + rule["old_name"])

    def trigger_names(self, rule):
        return dotted_name(rule["old_name"])

    def describe(self, rule):
        old, new = rule["old_name"], rule["new_name"]
        return f"{old} -> {new}" if "." in old else f".{old} -> .{new} on any receiver"

    def subject(self, rule):
        return name_subject(rule["old_name"])
