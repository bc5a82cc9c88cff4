"""Dotted names (``a.b.c``) of stdlib ast and libcst expressions, and back."""

from __future__ import annotations

import ast
from typing import List, Optional

import libcst as cst


def dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for an ast Name/Attribute chain, else None."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def chain_parts(node: cst.BaseExpression) -> Optional[List[str]]:
    """``['t', 'cuda', 'amp']`` for the libcst ``t.cuda.amp``; None unless a plain dotted chain."""
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
    """``a.b.c`` for a libcst Name/Attribute chain, else ''."""
    parts = chain_parts(node)
    return ".".join(parts) if parts else ""


def dotted_expression(text: str) -> cst.BaseExpression:
    """A libcst Name/Attribute chain for ``a.b.c`` (faster and safer than parsing source)."""
    parts = text.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def within(name: str, module: str) -> bool:
    """``name`` is ``module`` or one of its submodules (``torch.nn`` is within ``torch``)."""
    return name == module or name.startswith(module + ".")
