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
    """``table``: qualified call -> (attributes whose read keeps it, rule id, keywords of calls
    outside torch that read them)."""
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
            for call, name in _held(node.value, calls_bound, imports, table):
                if node.attr in table[name][0]:
                    found.add(_kept(call, name, table))
        for node in ast.walk(scope):  # passed by a keyword to a call outside torch, which reads it
            if isinstance(node, ast.Call) and node.keywords and not _torch_call(node, imports):
                for keyword in node.keywords:
                    held = _held(keyword.value, calls_bound, imports, table)
                    found.update(
                        _kept(call, name, table) for call, name in held if keyword.arg in table[name][2]
                    )
    return sorted(found)


def _held(value: ast.AST, calls_bound, imports, table) -> List[Tuple[ast.Call, str]]:
    """The table's calls whose result ``value`` is: the call itself, or a name bound to one."""
    if isinstance(value, ast.Name):
        return calls_bound.get(value.id, [])
    called = _table_call(value, imports, table)
    return [(value, called)] if called else []


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
