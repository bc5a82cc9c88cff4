"""The statements that bind names as a side effect (loop and with targets, except names,
globals), visited in source order. The ast visitors that track a file's names (the API
collector, the affinity scan) share them and say what a binding means to them."""

from __future__ import annotations

import ast


class SourceOrderBinder(ast.NodeVisitor):
    scopes = None  # a gpu2npu.rewrite.scopes.ScopeStack, set by the subclass

    def bind_target(self, target: ast.AST) -> None:
        """A loop, with or except target now holds a value this visitor knows nothing about."""
        raise NotImplementedError

    def bind_name(self, name: str) -> None:
        raise NotImplementedError

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

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.bind_name(node.name)
        for statement in node.body:
            self.visit(statement)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.scopes.declare_global(name)
