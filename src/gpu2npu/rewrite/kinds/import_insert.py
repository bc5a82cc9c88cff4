"""InsertImportRule: ``import torch_npu`` right after the first real ``torch`` import at module
level (``import torch``, ``import torch.nn as nn``, ``from torch import ...``; not
``pytorch_lightning`` nor ``.torch_utils``), once per module, never inside a function or class,
and not at all when the file already imports torch_npu."""

from __future__ import annotations

import ast
import re

import libcst as cst

from gpu2npu.rewrite.kinds._common import check_names
from gpu2npu.rules.model import Field

NAME = "InsertImportRule"
FIELDS = {
    "module": Field(str, required=True, dotted=True, help="module to import, e.g. torch_npu"),
    "after_module": Field(str, required=True, dotted=True, help="insert after the first import of this, e.g. torch"),
}


def validate(fields):
    return check_names(module=fields["module"], after_module=fields["after_module"])


def compile(rule, index):
    index.insert_imports.append(rule)


def trigger_words(rule):
    return {rule["after_module"]}


def already_imported(source: str, module: str) -> bool:
    """Whether the file imports ``module`` anywhere (then inserting it again would be noise).
    A text search finds candidates cheaply; the syntax tree confirms them (a docstring may
    quote an import)."""
    pattern = rf"^[ \t]*(import[ \t]+{re.escape(module)}\b|from[ \t]+{re.escape(module)}\b)"
    if re.search(pattern, source, re.MULTILINE) is None:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_within(alias.name, module) for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and node.module and _within(node.module, module):
            return True
    return False


def imports_module(statement: cst.BaseSmallStatement, module: str) -> bool:
    """Whether ``statement`` is an absolute import of ``module`` or one of its submodules."""
    if isinstance(statement, cst.Import):
        return any(_within(_dotted(alias.name), module) for alias in statement.names)
    if isinstance(statement, cst.ImportFrom) and not statement.relative and statement.module is not None:
        return _within(_dotted(statement.module), module)
    return False


def import_line(module: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.parse_expression(module))])])


def _within(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""
