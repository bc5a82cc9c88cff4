"""Parameters of a script's functions, read from the calls the script makes.

``def train(args, model, device, loader): ... data.to(device)`` says nothing of ``device``; the
call ``train(args, model, device, loader)`` in ``main()``, after ``device = torch.device(...)``,
does. Where every caller of a module-level function is in the file, each parameter is bound to
the arguments its callers pass (or to its default where a call leaves it out), so the device
facts (gpu2npu.rewrite.facts) judge it as they judge any local name. That holds for a script (a
file run as ``__main__`` that no file of the project imports) whose function is only called, never
passed around; everywhere else a parameter stays unknown.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Set, Tuple

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def caller_arguments(
    tree: ast.AST,
) -> Iterator[Tuple[ast.FunctionDef, str, List[Tuple[ast.AST, Optional[ast.Call]]]]]:
    """(function, parameter, [(value, the call; None for a default)]) for each parameter of a
    module-level function that is only ever called, by calls that all give it a value."""
    functions = {node.name: node for node in getattr(tree, "body", []) if isinstance(node, FUNCTIONS)}
    calls, escaped = _calls_of(tree, set(functions))
    for name, function in functions.items():
        if name in escaped or not calls.get(name):
            continue
        for parameter, position, default in _parameters(function.args):
            values = [_argument(call, parameter, position, default) for call in calls[name]]
            if all(value is not None for value, _ in values):
                yield function, parameter, values


def _calls_of(tree: ast.AST, names: Set[str]) -> Tuple[Dict[str, List[ast.Call]], Set[str]]:
    """Calls of the named functions, and the names also used otherwise (passed, stored, called
    with * or ** arguments): their callers cannot all be seen. A function that binds one of the
    names itself (a parameter ``train``) hides the module-level function in its body."""
    uses = _Uses(names)
    uses.visit(tree)
    return uses.calls, uses.escaped


class _Uses(ast.NodeVisitor):
    def __init__(self, names: Set[str]):
        self.names = names
        self.hidden: List[Set[str]] = [set()]
        self.calls: Dict[str, List[ast.Call]] = {}
        self.escaped: Set[str] = set()

    def _visible(self, name: str) -> bool:
        return name in self.names and not any(name in hidden for hidden in self.hidden)

    def visit_FunctionDef(self, node) -> None:
        for outer in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(outer)
        self.hidden.append(_bound_in(node) & self.names)
        for statement in node.body:
            self.visit(statement)
        self.hidden.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.hidden.append(_bound_in(node) & self.names)
        self.visit(node.body)
        self.hidden.pop()

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and self._visible(node.func.id):
            self.calls.setdefault(node.func.id, []).append(node)
            if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords
            ):
                self.escaped.add(node.func.id)
            for part in [*node.args, *node.keywords]:
                self.visit(part)
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if self._visible(node.id):
            self.escaped.add(node.id)


def _bound_in(function) -> Set[str]:
    """The names a function (or lambda) binds: its parameters and what its body assigns."""
    arguments = function.args
    params = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    names = {param.arg for param in params} | {a.arg for a in (arguments.vararg, arguments.kwarg) if a}
    body = function.body if isinstance(function.body, list) else [function.body]
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _parameters(arguments: ast.arguments) -> Iterator[Tuple[str, Optional[int], Optional[ast.AST]]]:
    """(name, position or None for keyword-only, default or None) of each named parameter."""
    positional = arguments.posonlyargs + arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    for position, (param, default) in enumerate(zip(positional, defaults)):
        yield param.arg, position, default
    for param, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        yield param.arg, None, default


def _argument(call: ast.Call, parameter: str, position: Optional[int], default: Optional[ast.AST]):
    """(the value a call gives the parameter, the call), or (its default, None), or (None, None)."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value, call
    if position is not None and position < len(call.args):
        return call.args[position], call
    return default, None
