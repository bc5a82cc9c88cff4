"""Which calls of a file stay on CUDA because the program reads a field of their result that
the NPU counterpart lacks (KeepReadRule): ``torch.cuda.get_device_properties(0).major``, or
``p = torch.cuda.get_device_properties(d)`` then ``p.minor`` in the same function. Read on the
stdlib ast before the rewrite pass."""

from __future__ import annotations

import ast
from typing import Dict, List, Set, Tuple

from gpu2npu.rewrite.changes import Kept
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import function_scopes


def kept_reads(tree: ast.AST, imports: Dict[str, str], table) -> List[Kept]:
    """``table``: qualified call -> (attributes whose read keeps it, rule id)."""
    found: Set[Kept] = set()
    for scope in function_scopes(tree):
        calls_bound: Dict[str, List[Tuple[ast.Call, str]]] = {}
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                called = _table_call(node.value, imports, table)
                if called:
                    calls_bound.setdefault(node.targets[0].id, []).append((node.value, called))
        for node in ast.walk(scope):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            receiver = node.value
            if isinstance(receiver, ast.Name):
                targets = calls_bound.get(receiver.id, [])
            else:
                called = _table_call(receiver, imports, table)
                targets = [(receiver, called)] if called else []
            for call, name in targets:
                reads, rule_id = table[name]
                if node.attr in reads:
                    line = call.func.lineno
                    found.add(Kept(line, name, call.func.end_lineno or line, name, rule_id))
    return sorted(found)


def _table_call(node: ast.AST, imports: Dict[str, str], table) -> str:
    if not isinstance(node, ast.Call):
        return ""
    name = qualify(dotted(node.func) or "", imports)
    return name if name in table else ""
