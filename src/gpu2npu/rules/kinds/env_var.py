"""EnvVarRenameRule: an environment variable name written as a string literal
(``os.environ['CUDA_VISIBLE_DEVICES']``, ``os.getenv('NCCL_BLOCKING_WAIT')``) becomes its
Ascend counterpart. Only whole literals match, so prose mentioning the variable is kept."""

from gpu2npu.rules.index import StringTarget
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.model import Field


class EnvVarRename(RuleKind):
    name = "EnvVarRenameRule"
    fields = {
        "old_name": Field(str, required=True, help="CUDA/NCCL variable, e.g. CUDA_VISIBLE_DEVICES"),
        "new_name": Field(str, required=True, help="Ascend variable, e.g. ASCEND_RT_VISIBLE_DEVICES"),
    }

    def validate(self, fields):
        for key in ("old_name", "new_name"):
            if not fields[key] or not fields[key].replace("_", "").isalnum():
                return f"'{key}' must be an environment variable name, not {fields[key]!r}"
        return None

    def compile(self, rule, index):
        old, new = rule["old_name"], rule["new_name"]
        index.strings.add(
            StringTarget(old, new, rule.id, "exact", f"change environment variable {old} to {new}")
        )

    def trigger_words(self, rule):
        return {rule["old_name"]}

    def describe(self, rule):
        return f"{rule['old_name']} -> {rule['new_name']}"

    def subject(self, rule):
        return rule["old_name"]
