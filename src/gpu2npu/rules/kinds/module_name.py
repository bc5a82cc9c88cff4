"""ModuleNameModifyRule (msFmkTransplt): ``parent_module.old_name`` becomes
``parent_module.new_name`` in every reference (``torch.cuda`` -> ``torch.npu``)."""

from gpu2npu.rules.index import NameTarget
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_identifier
from gpu2npu.rules.model import Field


class ModuleNameModify(RuleKind):
    name = "ModuleNameModifyRule"
    fields = {
        "old_name": Field(str, required=True, help="module name inside parent_module, e.g. cuda"),
        "new_name": Field(str, required=True, help="its replacement, e.g. npu"),
        "parent_module": Field(str, required=True, dotted=True, help="full dotted parent, e.g. torch"),
    }

    def validate(self, fields):
        for key in ("old_name", "new_name"):
            if not is_identifier(fields[key]):
                return f"'{key}' must be a single name (no dots), not {fields[key]!r}"
        return check_names(parent_module=fields["parent_module"])

    def compile(self, rule, index):
        parent_module = rule["parent_module"]
        index.names[f"{parent_module}.{rule['old_name']}"] = NameTarget(
            f"{parent_module}.{rule['new_name']}", rule.id, "module"
        )

    def trigger_words(self, rule):
        return {rule["old_name"]}

    def describe(self, rule):
        parent_module = rule["parent_module"]
        return f"{parent_module}.{rule['old_name']} -> {parent_module}.{rule['new_name']}"

    def subject(self, rule):
        return f"{rule['parent_module']}.{rule['old_name']}"
