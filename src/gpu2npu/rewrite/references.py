"""Dotted references: reading ``t.cuda.amp.GradScaler`` as a qualified name, and writing a
qualified name back as the shortest correct code at that spot."""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

# torch_npu makes ``torch.npu`` the same module object as ``torch_npu.npu`` when imported, so
# ``t.npu.synchronize()`` is a one-word edit of ``t.cuda.synchronize()`` that needs no new name.
EQUIVALENT_PREFIXES = (("torch_npu.npu", "torch.npu"), ("torch.npu", "torch_npu.npu"))


def chain_parts(node: cst.BaseExpression) -> Optional[List[str]]:
    """``['t', 'cuda', 'amp']`` for ``t.cuda.amp``; None unless the node is a plain dotted chain."""
    parts: List[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    parts.reverse()
    return parts


def dotted_name(node: cst.BaseExpression) -> str:
    parts = chain_parts(node)
    return ".".join(parts) if parts else ""


def equivalents(qualified: str) -> List[str]:
    """``qualified`` and the spellings torch_npu makes equivalent to it."""
    names = [qualified]
    for prefix, other in EQUIVALENT_PREFIXES:
        if qualified == prefix or qualified.startswith(prefix + "."):
            names.append(other + qualified[len(prefix):])
    return names


def render(root: str, root_refers_to: str, target: str) -> str:
    """Code for ``target`` written relative to the name ``root`` (bound to ``root_refers_to``)
    when possible, else the absolute dotted name."""
    for candidate in equivalents(target):
        if candidate == root_refers_to:
            return root
        if candidate.startswith(root_refers_to + "."):
            return root + candidate[len(root_refers_to):]
    return target


def module_and_name(qualified: str):
    module, _, name = qualified.rpartition(".")
    return module, name


def dotted_expression(text: str) -> cst.BaseExpression:
    """A Name/Attribute chain for ``a.b.c`` (faster and safer than parsing source)."""
    parts = text.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node
