"""Which calls of a wrapper the NPU lacks stay (UnwrapModelRule): all of them in a file that reads
the wrapper's own attribute (``model.module``), which the model alone would not have, and those in
a function whose result another file reads it of (pix2pixHD's ``create_model``). Read on the
stdlib ast before the rewrite pass; every other call of the wrapper is replaced by the model."""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Tuple

from gpu2npu.rewrite.changes import Kept
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes


def kept_wrappers(
    tree: ast.AST,
    imports: Dict[str, str],
    table: Dict[str, Tuple[str, str, str]],
    read_elsewhere: FrozenSet[str] = frozenset(),
) -> List[Kept]:
    """``table``: qualified wrapper -> (its attribute holding the model, rule id, tip where another
    file reads it); ``read_elsewhere``: the functions whose result another file reads it of."""
    kept = []
    returning = {
        id(call): node.name
        for node in module_nodes(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in read_elsewhere
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
    }
    for node in module_nodes(tree):
        if not isinstance(node, ast.Call):
            continue
        name = qualify(dotted(node.func) or "", imports)
        if name not in table:
            continue
        attribute, rule_id, returned_tip = table[name]
        line, end = node.func.lineno, node.func.end_lineno or node.func.lineno
        if reads_attribute(tree, attribute):
            kept.append(Kept(line, name, end, name, rule_id))
        elif id(node) in returning:
            kept.append(Kept(line, name, end, name, rule_id, tip=returned_tip))
    return kept


def reads_attribute(tree: ast.AST, attribute: str) -> bool:
    """Whether the file reads ``.attribute`` outside a test for it (hasattr, getattr, isinstance)."""
    guarded = set()
    for node in module_nodes(tree):
        if isinstance(node, (ast.If, ast.IfExp)) and _tests_for(node.test, attribute):
            guarded.update(id(child) for child in ast.walk(node))
    return any(
        isinstance(node, ast.Attribute) and node.attr == attribute and id(node) not in guarded
        for node in module_nodes(tree)
    )


def _tests_for(test: ast.AST, attribute: str) -> bool:
    """A test that asks whether the object is wrapped: it names the attribute as a string, or a
    wrapper class (``isinstance(m, nn.DataParallel)``)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Constant) and node.value == attribute:
            return True
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        if name.endswith("DataParallel"):
            return True
    return False
