"""RemoveImportRule: delete an import of a module that has no NPU build (``import amp_C``,
NVIDIA apex's CUDA kernels). Only that name is dropped from a multi-name import; a block left
empty gets ``pass``; comments above a removed line are kept."""

from __future__ import annotations

from gpu2npu.rewrite.kinds._common import check_names
from gpu2npu.rules.model import Field

NAME = "RemoveImportRule"
FIELDS = {
    "module": Field(str, required=True, dotted=True, help="module whose import is removed, e.g. amp_C"),
}


def validate(fields):
    return check_names(module=fields["module"])


def compile(rule, index):
    index.remove_imports[rule["module"]] = rule


def trigger_words(rule):
    return {rule["module"]}


def rule_for(name: str, index):
    """The removal rule for an imported dotted name (the module or a submodule of it)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        rule = index.remove_imports.get(".".join(parts[:end]))
        if rule is not None:
            return rule
    return None
