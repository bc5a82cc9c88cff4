"""Dotted references: reading ``t.cuda.amp.GradScaler`` as a qualified name, and writing a
qualified name back as the shortest correct code at that spot."""

from __future__ import annotations

from typing import List

# torch_npu makes ``torch.npu`` the same module object as ``torch_npu.npu`` when imported, so
# ``t.npu.synchronize()`` is a one-word edit of ``t.cuda.synchronize()`` that needs no new name.
EQUIVALENT_PREFIXES = (("torch_npu.npu", "torch.npu"), ("torch.npu", "torch_npu.npu"))
BUILTINS = "builtins."


def equivalents(qualified: str) -> List[str]:
    """``qualified`` and the spellings torch_npu makes equivalent to it."""
    names = [qualified]
    for prefix, other in EQUIVALENT_PREFIXES:
        if qualified == prefix or qualified.startswith(prefix + "."):
            names.append(other + qualified[len(prefix) :])
    return names


def render(root: str, root_refers_to: str, target: str) -> str:
    """Code for ``target`` written relative to the name ``root`` (bound to ``root_refers_to``)
    when possible, else the absolute dotted name (a builtin by its bare name: ``int``)."""
    if target.startswith(BUILTINS):
        return target[len(BUILTINS) :]
    for candidate in equivalents(target):
        if candidate == root_refers_to:
            return root
        if candidate.startswith(root_refers_to + "."):
            return root + candidate[len(root_refers_to) :]
    return target


def module_and_name(qualified: str):
    module, _, name = qualified.rpartition(".")
    return module, name
