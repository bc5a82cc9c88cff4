"""NameRenameRule: a fully qualified name moves (``torch.cuda.synchronize`` ->
``torch_npu.npu.synchronize``), wherever it is referenced: calls, plain references,
annotations, decorators and imports. ``new_name: null`` records that the name has no NPU
counterpart for the versions given, so no broader rename (``torch.cuda`` -> ...) touches it; it
keeps its name and is reported with ``tip``. With ``only_existing: true`` a longer name under
``old_name`` moves only where torch_npu has its counterpart for the target version (the
knowledge base's namespace facts); elsewhere it keeps its name and is reported. ``removed_in``
marks a name the target torch removed (``torch._six``): kept, it is reported as removed, and it
is no CUDA-only code (a CUDA test before it is still migrated). ``compared_name`` is what the
name becomes where it is compared (``==``, ``!=``, ``in``; portable's ``dist.get_backend() ==
dist.Backend.NCCL`` asks whether the group is the accelerator's, false without one).
"""

from gpu2npu.rules.index import NameTarget
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, name_subject
from gpu2npu.rules.model import Field


class NameRename(RuleKind):
    name = "NameRenameRule"
    fields = {
        "old_name": Field(
            str, required=True, dotted=True, help="fully qualified name, e.g. torch.cuda.synchronize"
        ),
        "new_name": Field(str, required=True, nullable=True, help="its NPU counterpart, or null for none"),
        "only_existing": Field(bool, default=False, help="names under it move only where torch_npu has them"),
        "tip": Field(str, default="", help="what to do where a name keeps its name"),
        "removed_in": Field(str, default="", help="the torch release that removed old_name"),
        "compared_name": Field(str, help="what it becomes where compared (==, !=, in), if not new_name"),
    }

    def validate(self, fields):
        return check_names(new_name=fields["new_name"], compared_name=fields["compared_name"])

    def compile(self, rule, index):
        index.names[rule["old_name"]] = NameTarget(
            rule["new_name"],
            rule.id,
            "name",
            rule["only_existing"],
            rule["tip"],
            rule["removed_in"],
            compared_new=rule["compared_name"],
        )

    def trigger_names(self, rule):
        return {rule["old_name"]} if rule["new_name"] is not None else set()

    def describe(self, rule):
        new = rule["new_name"] if rule["new_name"] is not None else "(kept: no NPU counterpart)"
        return f"{rule['old_name']} -> {new}"

    def subject(self, rule):
        return name_subject(rule["old_name"])
