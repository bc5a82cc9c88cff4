"""Inputs that only DataParallel moved to the device. Its forward scatters each call's tensors to
its cards (one card too), so a script may hand the wrapped model tensors it never moved itself
(DeepSDF: ``input = torch.cat([lat_vecs(i), xyz[i]], 1)`` from the loader, then
``decoder(input)``). Where the wrapper is replaced by the model alone, those tensors reach an NPU
model from the CPU. Found on the stdlib ast: an argument of a call of the wrapped name whose
value comes, through the scope's assignments, from a DataLoader's loop or a torch factory without
a device, with no move (``.cuda()``, ``.to(...)``, ``device=``) on the way."""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Tuple

from gpu2npu.rewrite.compared import scopes, walk_scope
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes

MOVES = frozenset({"cuda", "npu", "to"})  # methods that put a tensor on a device
FACTORIES = frozenset(
    {"tensor", "as_tensor", "from_numpy", "zeros", "ones", "rand", "randn", "randint", "randperm"}
    | {"arange", "full", "empty", "linspace", "eye", "normal"}
)  # torch functions that make a tensor on the CPU unless told a device
DEFAULT_DEVICE = ("set_default_device", "set_default_tensor_type")  # factories follow these
DEPTH = 16  # assignments followed back from an argument


def cpu_input_call(tree: ast.AST, imports: Dict[str, str], wrap: ast.Call) -> Optional[ast.Call]:
    """The first call of the model ``wrap`` (a DataParallel call) is bound to that is given a
    tensor only the wrapper moved to the device, or None."""
    if any(name.rsplit(".", 1)[-1] in DEFAULT_DEVICE for name in _called_names(tree)):
        return None
    bound = _bound_name(tree, wrap)
    if bound is None:
        return None
    for scope in scopes(tree):
        calls = sorted(_calls_of(scope, bound), key=lambda call: call.lineno)
        if not calls:
            continue
        bindings = _bindings(scope)
        same_scope = any(node is wrap for node in walk_scope(scope))
        for node in calls:
            if same_scope and node.lineno <= wrap.lineno:  # the model before it was wrapped
                continue
            arguments = list(node.args) + [k.value for k in node.keywords]
            if any(_on_cpu(a, node.lineno, bindings, imports, DEPTH) for a in arguments):
                return node
    return None


def _called_names(tree: ast.AST) -> Iterator[str]:
    for node in module_nodes(tree):
        if isinstance(node, ast.Call):
            yield dotted(node.func) or ""


def _bound_name(tree: ast.AST, wrap: ast.Call) -> Optional[str]:
    """``model`` of ``model = DataParallel(net)`` (or ``DataParallel(net).cuda()``), ``self.model``
    of an attribute; None where the wrapper is not bound to a name."""
    for node in module_nodes(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _wraps(node.value, wrap):
            return dotted(node.targets[0])
    return None


def _wraps(value: ast.AST, wrap: ast.Call) -> bool:
    while value is not wrap and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        value = value.func.value  # DataParallel(net).cuda().train()
    return value is wrap


def _calls_of(scope: ast.AST, name: str) -> Iterator[ast.Call]:
    for node in walk_scope(scope):
        if isinstance(node, ast.Call) and dotted(node.func) == name:
            yield node


Binding = Tuple[int, str, ast.AST, Optional[ast.AST]]  # line, "value" | "loop", expression, loop target


def _bindings(scope: ast.AST) -> Dict[str, List[Binding]]:
    """Each name's assignments in the scope, by line: the value it is given, or the iterable of
    the loop it is a target of."""
    found: Dict[str, List[Binding]] = {}
    for node in walk_scope(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name, value in _unpacked(target, node.value):
                    found.setdefault(name, []).append((node.lineno, "value", value, None))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).append((node.lineno, "value", node, None))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            for name in _names(node.target):
                found.setdefault(name, []).append((node.lineno, "loop", node.iter, node.target))
    for entries in found.values():
        entries.sort(key=lambda entry: entry[0])
    return found


def _unpacked(target: ast.AST, value: ast.AST) -> Iterator[Tuple[str, ast.AST]]:
    """Names and what they get: one element of a literal tuple, else the whole value."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
        for position, element in enumerate(target.elts):
            yield from _unpacked(element, value.elts[position] if pairs else value)


def _names(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id


def _on_cpu(node: ast.AST, line: int, bindings, imports, depth: int) -> bool:
    """Whether ``node``, read at ``line``, is a tensor made on the CPU that nothing moved."""
    if depth <= 0 or _moves(node):
        return False
    if isinstance(node, ast.Name):
        earlier = [entry for entry in bindings.get(node.id, ()) if entry[0] < line]
        if not earlier:
            return False  # a parameter, a global: not known
        at, kind, expression, target = earlier[-1]
        if kind == "loop":
            return _loader_loop(expression, target, node.id, bindings)
        return _on_cpu(expression, at, bindings, imports, depth - 1)
    if isinstance(node, ast.Call):
        name = qualify(dotted(node.func) or "", imports)
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in FACTORIES:
            return True
        if isinstance(node.func, ast.Attribute) and not name.startswith("torch."):
            return _on_cpu(node.func.value, line, bindings, imports, depth - 1)  # x.reshape(...)
        parts = node.args if name.startswith("torch.") else ()  # torch.cat([a, b]): of its tensors
        return any(_on_cpu(part, line, bindings, imports, depth - 1) for part in parts)
    if isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        return _on_cpu(node.value, line, bindings, imports, depth - 1)
    if isinstance(node, ast.AugAssign):
        return _on_cpu(node.value, line, bindings, imports, depth - 1)
    if isinstance(node, ast.BinOp):
        return any(_on_cpu(part, line, bindings, imports, depth - 1) for part in (node.left, node.right))
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_on_cpu(part, line, bindings, imports, depth - 1) for part in node.elts)
    return False


def _moves(node: ast.AST) -> bool:
    """Whether the expression puts something on a device: ``.cuda()``, ``.to(...)``, ``device=``."""
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            if isinstance(child.func, ast.Attribute) and child.func.attr in MOVES:
                return True
            if any(keyword.arg == "device" for keyword in child.keywords):
                return True
    return False


def _loader_loop(iterable: ast.AST, target: ast.AST, name: str, bindings) -> bool:
    """Whether ``name`` is a batch of a loop over a DataLoader (``for x, y in train_loader``,
    through ``enumerate``, ``tqdm`` or ``zip``), not ``enumerate``'s count nor a prefetcher's."""
    if isinstance(iterable, ast.Call) and dotted(iterable.func) == "enumerate" and iterable.args:
        if isinstance(target, ast.Tuple) and target.elts and name in _names(target.elts[0]):
            return False  # the count
    loaders = [
        dotted(node) or "" for node in ast.walk(iterable) if isinstance(node, (ast.Name, ast.Attribute))
    ]
    for loader in loaders:
        text = loader.lower()
        if "prefetch" in text or "cuda" in text or "device" in text:
            return False
    return any("loader" in loader.lower() or _made_by_dataloader(loader, bindings) for loader in loaders)


def _made_by_dataloader(name: str, bindings) -> bool:
    return any(
        isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("DataLoader")
        for _, kind, value, _ in bindings.get(name, ())
        if kind == "value"
    )
