"""Which calls of a wrapper the NPU lacks stay (UnwrapModelRule): all of them in a file that reads
the wrapper's own attribute (``model.module``), which the model alone would not have, and those in
a function whose result another file reads it of (pix2pixHD's ``create_model``). Read on the
stdlib ast before the rewrite pass; every other call of the wrapper is replaced by the model,
reported where the model then gets tensors only the wrapper moved (gpu2npu.rewrite.moved_inputs)."""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List

from gpu2npu.rewrite.changes import Kept
from gpu2npu.rewrite.moved_inputs import cpu_input_call
from gpu2npu.rules.index import KeptWrapper
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes


def kept_wrappers(
    tree: ast.AST,
    imports: Dict[str, str],
    table: Dict[str, KeptWrapper],
    read_elsewhere: FrozenSet[str] = frozenset(),
) -> List[Kept]:
    """``table``: the wrappers by qualified name; ``read_elsewhere``: the functions whose result
    another file reads a wrapper's attribute of, and (``.model``) the object attributes it reads
    it through."""
    kept = []
    returning = {
        id(call): node.name
        for node in module_nodes(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in read_elsewhere
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
    }
    held = {
        id(call)
        for node in module_nodes(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Attribute) and "." + t.attr in read_elsewhere for t in node.targets)
        for call in ast.walk(node.value)
        if isinstance(call, ast.Call)
    }
    for node in module_nodes(tree):
        if isinstance(node, ast.ClassDef):
            kept += _subclassed(node, imports, table)
        if not isinstance(node, ast.Call):
            continue
        name = qualify(dotted(node.func) or "", imports)
        if name not in table:
            continue
        wrapper = table[name]
        line, end = node.func.lineno, node.func.end_lineno or node.func.lineno
        if reads_attribute(tree, wrapper.attribute):
            kept.append(Kept(line, name, end, name, wrapper.rule_id))
        elif id(node) in returning:
            kept.append(Kept(line, name, end, name, wrapper.rule_id, tip=wrapper.returned_tip))
        elif id(node) in held:
            kept.append(Kept(line, name, end, name, wrapper.rule_id, tip=wrapper.attribute_tip))
        elif wrapper.inputs_tip:
            kept += _cpu_inputs(tree, imports, node, name, wrapper)
    return kept


def _subclassed(node: ast.ClassDef, imports, table: Dict[str, KeptWrapper]) -> List[Kept]:
    """A row on each base of the class that is a wrapper with a ``subclass_tip``: the class is the
    wrapper, which the NPU lacks, under another name."""
    kept = []
    for base in node.bases:
        name = qualify(dotted(base) or "", imports)
        wrapper = table.get(name)
        if wrapper is not None and wrapper.subclass_tip:
            end = base.end_lineno or base.lineno
            kept.append(
                Kept(base.lineno, SUBCLASS + name, end, name, wrapper.rule_id, tip=wrapper.subclass_tip)
            )
    return kept


def _cpu_inputs(tree, imports, wrap: ast.Call, name: str, wrapper: KeptWrapper) -> List[Kept]:
    """A row on the replaced call where the model is then given a tensor only it moved; its key
    is no name the rewrite pass looks up, so the call is still replaced."""
    call = cpu_input_call(tree, imports, wrap)
    if call is None:
        return []
    text = ast.unparse(call)
    text = text if len(text) <= 60 else text[:57] + "..."
    tip = wrapper.inputs_tip.format(call=text, line=call.lineno)
    line, end = wrap.func.lineno, wrap.func.end_lineno or wrap.func.lineno
    return [Kept(line, INPUTS + name, end, name, wrapper.rule_id, works=True, tip=tip)]


INPUTS = "inputs:"  # Kept.key of the row on a replaced wrapper whose model gets unmoved tensors
SUBCLASS = "subclass:"  # Kept.key of the row on a class deriving from a wrapper


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
