"""Which collectives of a file reduce a tensor in a dtype the NPU's collective library refuses
(ReducedDtypeRule): ``t = torch.tensor(..., dtype=torch.float64, device='cuda')`` then
``dist.all_reduce(t)`` in the same function. Read on the stdlib ast before the rewrite pass; the
call is kept and reported as failing."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from gpu2npu.rewrite.changes import Kept
from gpu2npu.rules.index import DEVICE_TEXT
from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import function_scopes


def kept_reductions(tree: ast.AST, imports: Dict[str, str], index) -> List[Kept]:
    found: List[Kept] = []
    for rule in index.reduced_dtypes:
        collectives = frozenset(rule["collectives"])
        spelled = {**imports, **_dtype_constants(tree, imports, rule)}
        for scope in function_scopes(tree):
            made = _names_made_in(scope, spelled, rule, index)
            if made:
                found += _reductions_of(scope, imports, collectives, made, rule)
    return sorted(set(found))


def _own_nodes(scope: ast.AST):
    """The nodes of a scope, not of the functions and classes inside it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _dtype_constants(tree: ast.AST, imports, rule) -> Dict[str, str]:
    """Module-level names bound to a refused dtype (stylegan2-ada's ``_counter_dtype =
    torch.float64``), as an import table reads them: name -> the dtype."""
    dtypes = set(rule["dtypes"])
    constants = {}
    for node in getattr(tree, "body", ()):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = qualify(dotted(node.value) or "", imports)
            if name in dtypes:
                constants[node.targets[0].id] = name
    return constants


def _names_made_in(scope: ast.AST, imports, rule, index) -> Dict[str, Tuple[int, str]]:
    """Name -> (line, dtype) for the names the scope binds to an expression in a refused dtype,
    and to a ``torch.stack``/``torch.cat`` of a list it appends such tensors to (stylegan2-ada's
    training_stats stacks its float64 counters, then reduces them)."""
    made: Dict[str, Tuple[int, str]] = {}
    assigns = [
        node
        for node in _own_nodes(scope)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    ]
    for node in assigns:
        dtype = _refused_dtype(node.value, imports, rule, index)
        if dtype:
            made[node.targets[0].id] = (node.lineno, dtype)
    filled = _lists_filled_with(scope, made)
    for node in assigns:
        joined = _joined_list(node.value, imports)
        if joined in filled:
            made[node.targets[0].id] = (node.lineno, filled[joined])
    return made


def _lists_filled_with(scope: ast.AST, made: Dict[str, Tuple[int, str]]) -> Dict[str, str]:
    """List name -> dtype for ``deltas.append(delta)`` of a name made in a refused dtype."""
    return {
        node.func.value.id: made[node.args[0].id][1]
        for node in _own_nodes(scope)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and isinstance(node.func.value, ast.Name)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in made
    }


def _joined_list(value: ast.AST, imports) -> str:
    """The list name of ``torch.stack(deltas)`` or ``torch.cat(deltas)``; '' for anything else."""
    if not isinstance(value, ast.Call) or not value.args or not isinstance(value.args[0], ast.Name):
        return ""
    if qualify(dotted(value.func) or "", imports) not in ("torch.stack", "torch.cat"):
        return ""
    return value.args[0].id


def _refused_dtype(value: ast.AST, imports, rule, index) -> str:
    """The refused dtype an expression makes its tensor in on a device, or '' (a tensor on the
    CPU may be reduced in a gloo group, which takes every dtype)."""
    if not _on_a_device(value):
        return ""
    dtypes = set(rule["dtypes"])
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            if _made_otherwise(node, imports, index):
                return ""
            if isinstance(node.func, ast.Attribute) and node.func.attr in rule["methods"] and not node.args:
                return f"torch.Tensor.{node.func.attr}"
        if isinstance(node, (ast.Attribute, ast.Name)):
            name = qualify(dotted(node) or "", imports)
            if name in dtypes:
                return name
    return ""


def _on_a_device(value: ast.AST) -> bool:
    """Whether an expression puts its tensor on a device: a ``device`` argument other than a CPU
    string, or a move (``.cuda()``, ``.to(...)``, ``.npu()``)."""
    for node in ast.walk(value):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "npu", "to"):
            return True
        for keyword in node.keywords:
            if keyword.arg == "device" and not (
                isinstance(keyword.value, ast.Constant) and str(keyword.value.value).startswith("cpu")
            ):
                return True
    return False


def _made_otherwise(call: ast.Call, imports, index) -> bool:
    """Whether ``migrate --optimize`` (DeviceDtypeRule) gives this call another dtype: it writes
    out that it makes the tensor on the device."""
    func = call.func
    key = "." + func.attr if isinstance(func, ast.Attribute) else ""
    entry = index.device_dtype_calls.get(
        qualify(dotted(func) or "", imports)
    ) or index.device_dtype_calls.get(key)
    if entry is None:
        return False
    parameters, _ = entry
    device = _argument(call, parameters, "device")
    return device is not None and _names_the_device(device, imports)


def _argument(call: ast.Call, parameters, name: str) -> Optional[ast.AST]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if name in parameters and parameters.index(name) < len(call.args):
        return call.args[parameters.index(name)]
    return None


def _names_the_device(value: ast.AST, imports) -> bool:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return bool(DEVICE_TEXT.match(value.value))
    if isinstance(value, ast.JoinedStr) and value.values:
        first = value.values[0]
        return isinstance(first, ast.Constant) and bool(DEVICE_TEXT.match(str(first.value)))
    if isinstance(value, ast.Call) and qualify(dotted(value.func) or "", imports) == "torch.device":
        return bool(value.args) and _names_the_device(value.args[0], imports)
    return False


def _reductions_of(scope, imports, collectives, made, rule) -> List[Kept]:
    found = []
    for node in _own_nodes(scope):
        if not isinstance(node, ast.Call):
            continue
        name = qualify(dotted(node.func) or "", imports)
        tensor = (
            node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "tensor"), None)
        )
        if name not in collectives or not isinstance(tensor, ast.Name) or tensor.id not in made:
            continue
        line, dtype = made[tensor.id]
        if line > node.lineno:
            continue
        tip = f"{tensor.id} is {dtype} (line {line}): {rule['tip']}"
        found.append(
            Kept(node.func.lineno, name, node.func.end_lineno or node.lineno, name, rule.id, tip=tip)
        )
    return found
