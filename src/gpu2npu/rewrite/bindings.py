"""Names a target's rewrites write instead of CUDA (BindNamesRule: ``DEVICE_TYPE``,
``DEVICE_MODULE``...): which name a module gets (never one its text already holds), which
statements it needs, and where they go (after its leading imports, with ``import torch`` where
the module lacks it)."""

from __future__ import annotations

import functools
import re
from typing import List, Mapping, Optional, Sequence, Tuple

import libcst as cst

from gpu2npu.rules.index import Binding
from gpu2npu.source.names import dotted_name


def free_name(name: str, source: str) -> str:
    """``name``, with ``_`` appended until the module's text does not hold the word."""
    while re.search(rf"\b{re.escape(name)}\b", source):
        name += "_"
    return name


def binding_lines(bindings: Mapping[str, Binding], source: str) -> set:
    """Lines of ``source`` that are lines of a binding statement (its names spelled with any
    ``_`` appended): a second migration leaves what the first one wrote as it is."""
    if not bindings or not any(name in source for name in bindings):
        return set()
    names = re.compile(r"\b(" + "|".join(re.escape(name) for name in bindings) + r")\b")
    patterns = {
        names.sub(lambda m: m.group(1) + "_*", re.escape(line.strip()))
        for binding in bindings.values()
        for line in binding.statement.splitlines()
        if line.strip()
    }
    wanted = re.compile("|".join(f"(?:{p})" for p in patterns))
    return {number for number, line in enumerate(source.splitlines(), 1) if wanted.fullmatch(line.strip())}


def needed_bindings(bindings: Mapping[str, Binding], used: Sequence[str]) -> List[Binding]:
    """The bindings of the names used and of the names their statements use, in binding order."""
    needed = set(used)
    pending = list(used)
    while pending:
        statement = bindings[pending.pop()].statement
        for other in bindings:
            if other not in needed and re.search(rf"\b{other}\b", statement):
                needed.add(other)
                pending.append(other)
    return [binding for name, binding in bindings.items() if name in needed]


def binding_statements(needed: Sequence[Binding], actual: Mapping[str, str]) -> List[cst.BaseStatement]:
    """The statements, with each name spelled as this module spells it."""
    if not needed:
        return []
    pattern = re.compile(r"\b(" + "|".join(re.escape(name) for name in actual) + r")\b")
    code = "\n".join(pattern.sub(lambda m: actual[m.group(1)], b.statement) for b in needed) + "\n"
    return list(_parsed(code))


@functools.lru_cache(maxsize=64)
def _parsed(code: str) -> Tuple[cst.BaseStatement, ...]:
    """The statements of ``code``, parsed once per run (libcst nodes are immutable)."""
    return tuple(cst.parse_module(code).body)


def binding_position(body: Sequence[cst.BaseStatement], start: int, limit: Optional[int] = None) -> int:
    """After the leading imports from ``start`` (past the docstring and ``__future__``), and
    after the first module-level ``import torch`` if it comes later; never after ``limit``, the
    first statement that uses a bound name (a notebook's first cell using the device, where a
    later cell imports torch again)."""
    position = start
    while position < len(body) and _is_import_block(body[position]):
        position += 1
    first_torch = next((number for number, statement in enumerate(body) if _binds_torch(statement)), None)
    if first_torch is not None:
        position = max(position, first_torch + 1)
    if limit is not None:
        position = max(start, min(position, limit))
    return position


def insert_bindings(
    body: List[cst.BaseStatement],
    statements: List[cst.BaseStatement],
    start: int,
    torch_bound: bool,
    limit: Optional[int] = None,
) -> Tuple[List[cst.BaseStatement], int]:
    """The body with the statements (and ``import torch`` if needed: where the module binds it
    only after them) in place, and where."""
    position = binding_position(body, start, limit)
    if limit is not None and position == limit and torch_bound:
        torch_bound = any(_imports_torch(statement) for statement in body[:position])
    if not torch_bound:
        statements = [cst.parse_statement("import torch\n"), *statements]
    return body[:position] + statements + body[position:], position


def lines_before(module: cst.Module, statements: Sequence[cst.BaseStatement]) -> int:
    """How many lines the module's header and these statements take."""
    header = cst.Module(body=[], header=module.header).code.count("\n")
    return header + sum(module.code_for_node(s).count("\n") for s in statements)


def _is_import_block(statement: cst.BaseStatement) -> bool:
    """An import line, or ``try:`` around import lines only (an optional import)."""
    if isinstance(statement, cst.SimpleStatementLine):
        return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body)
    if isinstance(statement, cst.Try) and isinstance(statement.body, cst.IndentedBlock):
        return all(_is_import_block(s) for s in statement.body.body)
    return False


def _imports_torch(statement: cst.BaseStatement) -> bool:
    """``import torch`` at module level, or in a ``try:`` of imports."""
    if isinstance(statement, cst.Try) and isinstance(statement.body, cst.IndentedBlock):
        return any(_imports_torch(inner) for inner in statement.body.body)
    return _binds_torch(statement)


def _binds_torch(statement: cst.BaseStatement) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(s, cst.Import)
        and any(
            alias.asname is None and dotted_name(alias.name).split(".")[0] == "torch" for alias in s.names
        )
        for s in statement.body
    )
