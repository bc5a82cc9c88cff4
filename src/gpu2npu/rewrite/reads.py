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

# methods of torch's tensors and streams that take a stream: passing torch.Stream there works
TORCH_STREAM_METHODS = frozenset({"record_stream", "wait_stream", "stream", "wait_event", "record_event"})


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
                if node.attr in table[name][0]:
                    found.add(_kept(call, name, table))
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and node.keywords and not _torch_call(node, imports):
                for keyword in node.keywords:
                    found.update(_passed(keyword, calls_bound, imports, table))
    return sorted(found)


def _passed(keyword: ast.keyword, calls_bound, imports, table):
    """The kept calls whose result a call outside torch takes by a keyword that reads it."""
    value = keyword.value
    if isinstance(value, ast.Name):
        targets = calls_bound.get(value.id, [])
    else:
        called = _table_call(value, imports, table)
        targets = [(value, called)] if called else []
    return [_kept(call, name, table) for call, name in targets if keyword.arg in table[name][2]]


def _kept(call: ast.Call, name: str, table) -> Kept:
    line = call.func.lineno
    return Kept(line, name, call.func.end_lineno or line, name, table[name][1])


def _torch_call(node: ast.Call, imports: Dict[str, str]) -> bool:
    """A call of a torch name, or of a method torch's streams and tensors have
    (``x.record_stream(s)``, ``s.wait_stream(t)``): they take torch's own streams."""
    name = dotted(node.func) or ""
    qualified = qualify(name, imports) if name else ""
    if qualified.startswith("torch."):
        return True
    return isinstance(node.func, ast.Attribute) and node.func.attr in TORCH_STREAM_METHODS


def _table_call(node: ast.AST, imports: Dict[str, str], table) -> str:
    if not isinstance(node, ast.Call):
        return ""
    name = qualify(dotted(node.func) or "", imports)
    return name if name in table else ""
