"""Where a module selects its device itself: a ``set_device`` call given something other than
the name ``-s`` binds (a rank), or the visible devices set in Python. An entry script that
does so, or that calls a function of a module it imports that does, must not have its device
selected at import (every rank would claim that card first)."""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, Optional, Set

from gpu2npu.source.imports import file_imports, qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.torch_names import FROM_ENVIRONMENT

MODULE_LEVEL = ""  # the selections made on import, outside any function


def device_selections(
    tree: ast.Module, name: str, frameworks: FrozenSet[str] = frozenset()
) -> Dict[str, int]:
    """By the function that makes it (a method by its own name; ``MODULE_LEVEL`` on import),
    the first line where the module selects its device; a function that names one that does
    (calls it, or hands it to a process starter: pycls's multi_proc_run starts single_proc_run,
    which calls setup_distributed) selects it too, at that line. ``frameworks``: the calls that
    select it too (``accelerate.Accelerator``)."""
    found: Dict[str, int] = {}
    named: Dict[str, Set[str]] = {}  # function -> the names its body reads
    table = file_imports(tree) if frameworks else {}
    for statement in tree.body:
        for owner, node in _owned_statements(statement):
            line = selects_its_device(node, name, frameworks, table)
            if line and (owner not in found or line < found[owner]):
                found[owner] = line
            if owner != MODULE_LEVEL:
                named.setdefault(owner, set()).update(_names_read(node))
    reached = True
    while reached:  # through the module's own functions, to a fixed point
        reached = False
        for owner, names in named.items():
            lines = [found[other] for other in names & found.keys() if other != MODULE_LEVEL]
            if owner not in found and lines:
                found[owner] = min(lines)
                reached = True
    return found


def _names_read(node: ast.AST) -> Set[str]:
    return {
        sub.id if isinstance(sub, ast.Name) else sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, (ast.Name, ast.Attribute))
    }


def selects_its_device(
    tree: ast.AST, name: str, frameworks: FrozenSet[str] = frozenset(), table: Optional[Dict[str, str]] = None
) -> int:
    """The first line in ``tree`` where the device is selected otherwise than by ``name``, or by
    a call of ``frameworks`` (each process of ``accelerate launch`` or ``deepspeed`` takes its own
    card there; ``table``: the module's imports, read from ``tree`` where not given), 0 none."""
    if frameworks and table is None:
        table = file_imports(tree)
    lines = [
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Call) and _sets_device_otherwise(node, name))
        or (isinstance(node, (ast.Assign, ast.Call)) and _sets_visible_devices(node))
        or (
            frameworks
            and isinstance(node, ast.Call)
            and qualify(dotted(node.func) or "", table) in frameworks
        )
    ]
    return min(lines, default=0)


def narrows_visible_devices(tree: ast.AST) -> bool:
    """Whether ``tree`` sets the visible devices in Python (FastChat's ``--gpus``): a device
    selected before that would void it, even one the environment names. Not where a function
    sets them only when an option asks (yolov5's ``select_device``: ``elif device:``): without
    the option nothing narrows the cards, and the process must use the one the environment
    names."""
    masks = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.Call)) and _sets_visible_devices(n)]
    optional = {id(node) for node in _optional_masks(tree)} if masks else set()
    return any(id(mask) not in optional for mask in masks)


def _optional_masks(tree: ast.AST) -> Iterator[ast.AST]:
    """The visible-device settings in functions that only run under an ``if`` testing something
    other than the environment (an option of the program)."""
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for branch in ast.walk(function):
                if isinstance(branch, ast.If) and not _reads_the_environment(branch.test):
                    for statement in [*branch.body, *branch.orelse]:
                        yield from ast.walk(statement)


def _reads_the_environment(test: ast.AST) -> bool:
    return any(
        isinstance(node, (ast.Attribute, ast.Name)) and getattr(node, "attr", getattr(node, "id", "")) in _ENV
        for node in ast.walk(test)
    )


_ENV = frozenset({"environ", "getenv"})


def _owned_statements(statement: ast.stmt):
    """(owner, node): a function by its name, each method of a class by its name, anything else
    as run on import."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield statement.name, statement
    elif isinstance(statement, ast.ClassDef):
        for item in statement.body:
            owner = item.name if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else MODULE_LEVEL
            yield owner, item
    else:
        yield MODULE_LEVEL, statement


def _sets_device_otherwise(node: ast.Call, name: str) -> bool:
    if (dotted(node.func) or "").rsplit(".", 1)[-1] != "set_device":
        return False
    given = node.args[0] if node.args else None
    return not (isinstance(given, ast.Name) and given.id == name)


def _sets_visible_devices(node: ast.AST) -> bool:
    """``os.environ['X_VISIBLE_DEVICES'] = ...`` or ``os.environ.setdefault('X_VISIBLE_DEVICES', ...)``,
    naming cards: ``'-1'`` or ``''`` hides them all for a CPU run (EfficientDet's ``num_gpus == 0``),
    which selects none."""
    if isinstance(node, ast.Assign):
        keys = [t.slice for t in node.targets if isinstance(t, ast.Subscript)]
        value = node.value
    elif (dotted(node.func) or "").endswith("environ.setdefault") or dotted(node.func) == "os.putenv":
        keys = node.args[:1]
        value = node.args[1] if len(node.args) > 1 else None
    else:
        return False
    if isinstance(value, ast.Constant) and str(value.value).strip() in _NO_CARD:
        return False
    return any(isinstance(k, ast.Constant) and str(k.value).endswith("VISIBLE_DEVICES") for k in keys)


_NO_CARD = frozenset({"-1", ""})  # visible-device values that hide every card


def rank_alternatives(tree: ast.AST) -> Set[int]:
    """The lines of the branches that name a card themselves where the other branch takes it from
    a rank or the environment (open_flamingo's ``device = "cuda:%d" % args.local_rank`` else
    ``"cuda:0"``, the branch for one visible card per process): the code has chosen there."""
    lines: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node.orelse:
            branches = (node.body, node.orelse)
        elif isinstance(node, ast.IfExp):
            branches = ([node.body], [node.orelse])
        else:
            continue
        for branch, other in (branches, branches[::-1]):
            if any(FROM_ENVIRONMENT.search(ast.unparse(part)) for part in other):
                lines.update(_lines_of(branch))
    return lines


def _lines_of(nodes) -> Set[int]:
    return {line for node in nodes for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
