"""Python source: migrated by gpu2npu.rewrite and analysed by gpu2npu.apis (the worker runs both).
A ``setup.py`` also declares the project's dependencies: they join the dependency plan. An
environment variable an EnvVarReportRule knows is reported where a string literal names it
(``os.environ['NCCL_SOCKET_IFNAME'] = ...``), as where a launcher exports it, and an attribute
an AttributeReportRule knows where it is read (``x.is_cuda``)."""

from __future__ import annotations

import ast
from typing import List

from gpu2npu.filekinds import PYTHON, FileKind
from gpu2npu.filekinds.base import Reported
from gpu2npu.filekinds.packaging import setup_py_dependencies
from gpu2npu.filekinds.shell import shell_tables
from gpu2npu.rewrite.guards import ANY_RECEIVER
from gpu2npu.source.parse import module_nodes, parse_ast

SETUP_SCRIPT = "setup.py"


def declared_dependencies(data: bytes, rel: str, index, tree=None):
    """(plan rows, reported items) of the requirements a setup.py declares; none elsewhere."""
    if rel.rsplit("/", 1)[-1] != SETUP_SCRIPT or b"require" not in data:
        return [], []
    return setup_py_dependencies(data, index, tree)


def python_reports(data: bytes, index, tree=None, kept=()) -> List[Reported]:
    """What the reporting rules find in Python code: variables (EnvVarReportRule) and attribute
    reads (AttributeReportRule); the file is parsed here only if a byte scan finds one of them
    and the run has not parsed it yet."""
    tables = shell_tables(index)
    words = list(tables.reported_names) + [prefix for prefix, _ in tables.reported_prefixes]
    variables = any(word.encode() in data for word in words)
    attributes = {rule["attribute"]: rule for rule in index.rules_of("AttributeReportRule")}
    attributes = {name: rule for name, rule in attributes.items() if f".{name}".encode() in data}
    if not (variables or attributes) or (tree is None and (tree := parse_ast(data)) is None):
        return []
    rows = _variables_reported(tree, tables) if variables else []
    return sorted(rows + (_attributes_reported(tree, attributes, kept) if attributes else []))


def _variables_reported(tree, tables) -> List[Reported]:
    """A row for each string literal that is a variable an EnvVarReportRule reports (whole
    literals only, docstrings aside); a variable an EnvVarRenameRule renames is renamed instead."""
    prose = {id(node.value) for node in module_nodes(tree) if isinstance(node, ast.Expr)}
    rows = set()
    for node in module_nodes(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            rule = None if node.value in tables.renames else tables.reported_variable(node.value)
            if rule is not None:
                where = (node.lineno, node.end_lineno)
                rows.add(Reported(*where, node.value, rule["tip"], rule.id, rule["category"]))
    return list(rows)


def _attributes_reported(tree, rules, kept) -> List[Reported]:
    """A row for each read of an attribute an AttributeReportRule reports, but where a rule keeps
    the read (a kept guard, reported by that rule) and in modules that assign the attribute (it is
    their own objects')."""
    uses = [node for node in module_nodes(tree) if isinstance(node, ast.Attribute) and node.attr in rules]
    assigned = {node.attr for node in uses if not isinstance(node.ctx, ast.Load)}
    kept_reads = {(k.line, k.key) for k in kept}
    rows = set()
    for node in uses:
        if node.attr in assigned or (node.end_lineno, ANY_RECEIVER + node.attr) in kept_reads:
            continue
        rule = rules[node.attr]
        where = (node.lineno, node.end_lineno)
        rows.add(Reported(*where, ast.unparse(node), rule["tip"], rule.id, rule["category"]))
    return list(rows)


class PythonSource(FileKind):
    name = PYTHON
    order = 0
    max_bytes = None  # the Python reader has its own limits, reported per file
    holds_code = True

    def claims(self, rel, head):
        return rel.endswith(".py")
