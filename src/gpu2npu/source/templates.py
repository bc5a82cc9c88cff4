"""Expressions written from a template whose ``{name}`` placeholders stand for expressions of the
source (``1 - {dropout_p}``), keeping each substituted node as it is (its comments, its layout)
and parenthesising it where the template's operators would bind it differently."""

from __future__ import annotations

import ast
import re
from typing import Dict, List

import libcst as cst

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MARK = "__gpu2npu_{}__"
# Nodes that stay one operand whatever surrounds them.
_ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.List,
    cst.Tuple,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
)
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.Tuple, cst.UnaryOperation)


def placeholders(template: str) -> List[str]:
    """The names a template reads, in order, each once."""
    return list(dict.fromkeys(PLACEHOLDER.findall(template)))


def template_code(template: str) -> str:
    """The template as Python source, its placeholders made names (for checking it parses)."""
    return PLACEHOLDER.sub(lambda m: _MARK.format(m.group(1)), template)


def fill(template: str, values: Dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """The template's expression with each placeholder replaced by ``values[name]``."""
    return cst.parse_expression(template_code(template)).visit(_Substitute(values))


def is_plain(node: cst.BaseExpression) -> bool:
    """Whether reading ``node`` twice reads the same thing at no cost: a dotted name or a literal."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)) or _is_constant(node)


def literal(node: cst.BaseExpression, code: str):
    """``(True, value)`` for a literal (``0.0``, ``None``, ``(-1, -1)``), else ``(False, None)``."""
    if _is_constant(node) or isinstance(node, _LITERALS):
        try:
            return True, ast.literal_eval(code)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False, None
    return False, None


def _is_constant(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False", "None")


class _Substitute(cst.CSTTransformer):
    def __init__(self, values: Dict[str, cst.BaseExpression]):
        self._values = {_MARK.format(name): value for name, value in values.items()}

    def leave_Name(self, original_node, updated_node):
        value = self._values.get(updated_node.value)
        if value is None:
            return updated_node
        value = value.deep_clone()  # a placeholder may be read twice: no node in two places
        if isinstance(value, _ATOMS) or value.lpar:
            return value
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
