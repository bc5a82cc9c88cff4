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
    anchor = _torch_anchor(body)
    if anchor is not None:
        position = max(position, anchor + 1)
    if limit is not None:
        position = max(start, min(position, limit))
    return position


def insert_bindings(
    body: List[cst.BaseStatement],
    statements: List[cst.BaseStatement],
    start: int,
    limit: Optional[int] = None,
) -> Tuple[List[cst.BaseStatement], int, int]:
    """The body with the statements in place (with ``import torch`` where the module does not
    bind it before them), where (the top-level statement) and how many lines into it.

    Where the module binds torch only inside an ``if``/``try`` (``if is_torch_available():
    import torch``), they go into that block, right after the imports: outside it they would
    run where torch is not bound (a NameError on import)."""
    position = binding_position(body, start, limit)
    anchor = _torch_anchor(body[:position])
    if anchor is None:
        statements = [cst.parse_statement("import torch\n"), *statements]
    elif not _binds_torch(body[anchor]):
        inside = _inserted_after_torch(body[anchor], statements)
        code = cst.Module(body=[]).code_for_node(inside)
        first = cst.Module(body=[]).code_for_node(statements[0]).strip().splitlines()[0]
        into = code[: code.index(first)].count("\n")
        return body[:anchor] + [inside] + body[anchor + 1 :], anchor, into
    return body[:position] + statements + body[position:], position, 0


def lines_before(module: cst.Module, statements: Sequence[cst.BaseStatement]) -> int:
    """How many lines the module's header and these statements take."""
    return len(module.header) + sum(module.code_for_node(s).count("\n") for s in statements)


def _is_import_block(statement: cst.BaseStatement) -> bool:
    """An import line, or ``try:`` around import lines only (an optional import)."""
    if isinstance(statement, cst.SimpleStatementLine):
        return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body)
    if isinstance(statement, cst.Try) and isinstance(statement.body, cst.IndentedBlock):
        return all(_is_import_block(s) for s in statement.body.body)
    return False


def _torch_anchor(body: Sequence[cst.BaseStatement]) -> Optional[int]:
    """Where the first statement is that binds ``torch`` when the module runs: ``import torch``
    itself, else an ``if``/``try``/``with`` holding it (not ``if TYPE_CHECKING:``). A module-level
    import goes first: segment-anything's notebook imports torch under ``if using_colab:`` (False)
    and again in a later cell, and names bound in that block were never bound."""
    direct = next((number for number, statement in enumerate(body) if _binds_torch(statement)), None)
    if direct is not None:
        return direct
    return next((number for number, statement in enumerate(body) if _binds_torch_within(statement)), None)


def _binds_torch_within(statement: cst.BaseStatement) -> bool:
    return _binds_torch(statement) or any(
        _binds_torch_within(inner) for block in _run_blocks(statement) for inner in block.body
    )


def _inserted_after_torch(statement: cst.BaseStatement, statements: List[cst.BaseStatement]):
    """The compound statement with ``statements`` after the imports that bind torch in it."""
    for block in _run_blocks(statement):
        inner = list(block.body)
        at = next((n for n, s in enumerate(inner) if _binds_torch_within(s)), None)
        if at is None:
            continue
        if _binds_torch(inner[at]):
            after = at + 1
            while after < len(inner) and _is_import_block(inner[after]):
                after += 1
            inner[after:after] = statements
        else:
            inner[at] = _inserted_after_torch(inner[at], statements)
        return statement.deep_replace(block, block.with_changes(body=inner))  # by identity
    return statement


def _run_blocks(statement: cst.BaseStatement) -> List[cst.BaseSuite]:
    """The indented blocks of a compound statement that may run (an ``if TYPE_CHECKING:`` body
    never does), in source order."""
    blocks: List[cst.BaseSuite] = []
    if isinstance(statement, cst.If):
        if not _is_type_checking(statement.test):
            blocks.append(statement.body)
        if statement.orelse is not None:
            blocks.extend(
                _run_blocks(statement.orelse)
                if isinstance(statement.orelse, cst.If)
                else [statement.orelse.body]
            )
    elif isinstance(statement, cst.Try):
        blocks.append(statement.body)
        blocks.extend(handler.body for handler in statement.handlers)
        blocks.extend(part.body for part in (statement.orelse, statement.finalbody) if part is not None)
    elif isinstance(statement, cst.With):
        blocks.append(statement.body)
    return [block for block in blocks if isinstance(block, cst.IndentedBlock)]


def _is_type_checking(test: cst.BaseExpression) -> bool:
    return dotted_name(test).split(".")[-1] == "TYPE_CHECKING"


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
