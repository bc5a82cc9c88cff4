"""An ast visitor that knows, at every node, which name means what.

The readers of a file's API uses (the call-site collector, the affinity scan) walk the stdlib
ast in source order and keep a ScopeStack as they go, as the rewrite pass does on libcst: imports
bind names to qualified names (through the one import table, gpu2npu.source.imports), anything
else (parameters, loop, with and except targets, ...) makes a name a plain local. Subclasses say
what a binding means to them by overriding ``bind_name`` and ``bind_target``.
"""

from __future__ import annotations

import ast
from contextlib import nullcontext
from typing import List, Optional

from gpu2npu.source.imports import STAR, ImportedName, imported_names
from gpu2npu.source.names import dotted
from gpu2npu.source.scopes import LOCAL, Binding, ImportBinding, ScopeStack


def qualified_name(scopes: ScopeStack, node: ast.AST) -> str:
    """``torch.nn.Linear`` for ``nn.Linear`` after ``from torch import nn``; '' when the
    expression is not a dotted name rooted at an import."""
    name = dotted(node)
    if not name:
        return ""
    root, _, rest = name.partition(".")
    binding = scopes.resolve_import(root)
    if binding is None:
        return ""
    return binding.original + ("." + rest if rest else "")


class ScopedReader(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scopes = ScopeStack()

    # -- what a binding means (subclasses refine these) --------------------------------------

    def bind_name(self, name: str, binding: Binding = LOCAL) -> None:
        self.scopes.bind(name, binding)

    def bind_target(self, target: ast.AST) -> None:
        """A loop, with or except target now holds a value this reader knows nothing about."""
        raise NotImplementedError

    def push_scope(self, kind: str) -> None:
        self.scopes.push(kind)

    def pop_scope(self) -> None:
        self.scopes.pop()

    # -- shared bindings ----------------------------------------------------------------------

    def qualified(self, node: ast.AST) -> str:
        return qualified_name(self.scopes, node)

    def bind_imports(
        self, node: ast.AST, module: Optional[str] = None, is_package: bool = False
    ) -> List[ImportedName]:
        """Bind the names of an import statement (relative ones resolved from ``module``);
        returns what it imports, star imports included."""
        names = imported_names(node, module, is_package)
        for name in names:
            if name.local != STAR:
                qualified = name.qualified
                self.bind_name(name.local, ImportBinding(qualified, qualified) if qualified else LOCAL)
        return names

    def bind_arguments(self, arguments: ast.arguments) -> None:
        for param in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
            self.bind_name(param.arg)
        for extra in (arguments.vararg, arguments.kwarg):
            if extra is not None:
                self.bind_name(extra.arg)

    def visit_defaults(self, arguments: ast.arguments) -> None:
        for default in arguments.defaults + [d for d in arguments.kw_defaults if d is not None]:
            self.visit(default)

    # -- statements that bind as a side effect, in source order -----------------------------

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit_defaults(node.args)
        self.push_scope("function")
        self.bind_arguments(node.args)
        self.visit(node.body)
        self.pop_scope()

    def visit_For(self, node) -> None:
        self.visit(node.iter)
        self.bind_target(node.target)
        for statement in node.body + node.orelse:
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node: ast.withitem) -> None:
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self.bind_target(node.optional_vars)

    def branch(self, test: ast.AST, taken: bool):
        """A context for the statements that run where ``test`` is true (``taken``) or false;
        subclasses that read what a test proves (``hasattr(torch, "accelerator")``) refine it."""
        return nullcontext()

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        with self.branch(node.test, True):
            for statement in node.body:
                self.visit(statement)
        self.scopes.enter_fallback()  # ``if found: import torch`` / ``else: torch = None``
        with self.branch(node.test, False):
            for statement in node.orelse:
                self.visit(statement)
        self.scopes.leave_fallback()

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.bind_name(node.name)
        self.scopes.enter_fallback()
        for statement in node.body:
            self.visit(statement)
        self.scopes.leave_fallback()

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.scopes.declare_global(name)
