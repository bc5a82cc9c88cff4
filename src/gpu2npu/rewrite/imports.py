"""Putting an ``import`` line into a module: where (after the first real import of a module at
module level, never inside a def or class, never twice; in a module that imports it only inside
functions, after the first such import of each of them) and how (as a libcst statement, or as a
line of text when the file needs no other edit).

A rewrite primitive of the engine: InsertImportRule entries ask for it through the index
(``ImportInsertion``), and the rewrite pass uses it when a rewritten name needs a new import.
"""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from gpu2npu.rules.index import ImportInsertion
from gpu2npu.source.names import dotted, dotted_name, within
from gpu2npu.source.parse import module_nodes

ENVIRONMENTS = ("os.environ", "environ")  # the mapping a script sets variables in


def already_imported(source: str, module: str, tree: Optional[ast.AST] = None) -> bool:
    """Whether the file imports ``module`` anywhere (then inserting it again would be noise).
    A text search finds candidates cheaply; the syntax tree (the caller's, when it has one)
    confirms them (a docstring may quote an import)."""
    if re.search(rf"\b(?:import|from)[ \t]+{re.escape(module)}\b", source) is None:
        return False
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return True
    return _ast_imports(tree, module)


def import_missing(source: str, insertion: ImportInsertion, tree: Optional[ast.Module]) -> bool:
    """Whether the insertion's import is missing where it would go: at module level where the file
    imports ``after_module`` there (an import inside a function runs only once it is called), else
    anywhere."""
    if not already_imported(source, insertion.module, tree):
        return True
    return tree is not None and _missing_at_module_level(tree, insertion)


def _missing_at_module_level(tree: ast.Module, insertion: ImportInsertion) -> bool:
    return (
        first_module_level_import(tree, insertion.module) is None
        and first_module_level_import(tree, insertion.after_module) is not None
    )


def imports_module(statement: cst.BaseSmallStatement, module: str) -> bool:
    """Whether ``statement`` is an absolute import of ``module`` or one of its submodules."""
    if isinstance(statement, cst.Import):
        return any(within(dotted_name(alias.name), module) for alias in statement.names)
    if isinstance(statement, cst.ImportFrom) and not statement.relative and statement.module is not None:
        return within(dotted_name(statement.module), module)
    return False


def import_line(module: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.parse_expression(module))])])


# -- the text path: files whose only change is this insertion need no syntax tree ------------------


def insert_by_text(data: bytes, insertions: Sequence[ImportInsertion], tree: ast.Module):
    """Insert each import as a line of text after the first module-level import of its
    ``after_module``: (new bytes, [(insertion, line of that import)]), or None when the text
    method cannot be sure of the result (the caller then takes the libcst path). ``tree``: the ast."""
    if b"\r" in data.replace(b"\r\n", b""):
        return None  # lone CR line ends: ast and bytes.split would count lines differently
    lines = data.split(b"\n")
    placed = []
    for insertion in insertions:
        if _ast_imports(tree, insertion.module) and not _missing_at_module_level(tree, insertion):
            continue
        for statement in import_places(tree, insertion.after_module):
            if not _alone_on_its_lines(lines, statement):
                return None
            placed.append((statement, insertion))
    for statement, insertion in sorted(placed, key=lambda item: -item[0].end_lineno):
        _insert_line(lines, statement, f"import {insertion.module}".encode())
    return b"\n".join(lines), [(insertion, statement.lineno) for statement, insertion in placed]


def _insert_line(lines, statement, text: bytes) -> None:
    """Insert ``text`` after the statement, indented like it, with the file's line ending."""
    first = lines[statement.lineno - 1]
    if statement.lineno == 1:
        first = first.lstrip(b"\xef\xbb\xbf")
    indent = first[: len(first) - len(first.lstrip(b" \t"))]
    last_index = statement.end_lineno - 1
    carriage = b"\r" if lines[last_index].endswith(b"\r") else b""
    if last_index == len(lines) - 1:  # the statement ends the file without a newline
        lines[last_index] += carriage
        lines.append(indent + text)
    else:
        lines.insert(last_index + 1, indent + text + carriage)


def _ast_imports(tree: ast.AST, module: str) -> bool:
    """Whether the tree imports ``module`` (or a submodule) anywhere."""
    for node in module_nodes(tree):
        if isinstance(node, ast.Import) and any(within(alias.name, module) for alias in node.names):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and node.module
            and within(node.module, module)
        ):
            return True
    return False


def import_places(tree: ast.Module, module: str) -> List[ast.stmt]:
    """The imports of ``module`` an import goes after: the first at module level, else the first
    of each function that imports it (a module importing torch lazily still needs torch_npu)."""
    statement = first_module_level_import(tree, module)
    if statement is not None:
        return [statement]
    return [
        found
        for node in module_nodes(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for found in [_first_ast_import(node.body, module)]
        if found is not None
    ]


def first_module_level_import(tree: ast.Module, module: str) -> Optional[ast.stmt]:
    """The first import of ``module`` the module always runs (in its own body), else the first in
    its if/try/with/for blocks: an import under ``if`` may never run."""
    direct = next((s for s in tree.body if _first_ast_import([s], module) is s), None)
    return direct if direct is not None else _first_ast_import(tree.body, module)


def _first_ast_import(body, module: str):
    """The first import of ``module`` at module level, looking into if/try/with/for blocks
    (not into def or class), in source order -- as the libcst path finds it."""
    for statement in body:
        if isinstance(statement, ast.Import) and any(within(a.name, module) for a in statement.names):
            return statement
        if (
            isinstance(statement, ast.ImportFrom)
            and not statement.level
            and within(statement.module or "", module)
        ):
            return statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if _is_type_checking(statement):  # its body never runs: only its else may
            found = _first_ast_import(statement.orelse, module)
            if found is not None:
                return found
            continue
        for child in ast.iter_child_nodes(statement):
            block = [child] if isinstance(child, ast.stmt) else getattr(child, "body", None)
            found = _first_ast_import(block, module) if isinstance(block, list) else None
            if found is not None:
                return found
    return None


def _is_type_checking(statement: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``), whose imports serve annotations only."""
    if not isinstance(statement, ast.If):
        return False
    test = statement.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _alone_on_its_lines(lines, statement) -> bool:
    """Nothing else shares the statement's lines (comments aside), in plain ASCII text."""
    first, last = lines[statement.lineno - 1], lines[statement.end_lineno - 1]
    if statement.lineno == 1:
        first = first.lstrip(b"\xef\xbb\xbf")
    if not (first.isascii() and last.isascii()):
        return False  # ast offsets count UTF-8 bytes; other encodings could shift them
    if first[: statement.col_offset].strip():
        return False  # `if x: import torch`
    rest = last[statement.end_col_offset :].strip()
    return not rest or rest.startswith(b"#")  # not `import torch; x = 1`


# -- the top of a module: entry-script imports ------------------------------------------------------


def insert_at_top(
    data: bytes, tree: ast.Module, statements: Sequence[str], after_imports: bool = False
) -> Optional[Tuple[bytes, int]]:
    """Insert ``statements`` (in order) after the module's docstring and ``from __future__``
    imports (``after_imports``: and the imports that follow them), before anything else (a
    shebang and comment lines above the first statement stay first): (new bytes, line of the
    first inserted statement), or None when the text method cannot be sure of the result."""
    if b"\r" in data.replace(b"\r\n", b""):
        return None  # lone CR line ends: ast and bytes.split would count lines differently
    lines = data.split(b"\n")
    leading = leading_statements(tree, after_imports)
    carriage = b"\r" if lines[0].endswith(b"\r") else b""
    block = [text.encode("ascii") + carriage for text in statements]
    if leading:
        last = leading[-1]
        if not _alone_on_its_lines(lines, last):
            return None
        at = last.end_lineno  # the line after it (0-based index)
    elif tree.body:
        at = tree.body[0].lineno - 1
        if tree.body[0].col_offset:
            return None  # `x = 1; import os` on one line
    else:
        at = len(lines) - 1 if lines[-1] == b"" else len(lines)
    if at == len(lines):  # the file ends without a newline after the last statement
        lines[-1] += carriage
        lines.append(b"")
        at = len(lines) - 1
    bom = b"\xef\xbb\xbf"
    if at == 0 and lines[0].startswith(bom):  # the byte order mark stays the first bytes
        lines[0], block[0] = lines[0][len(bom) :], bom + block[0]
    lines[at:at] = block
    return b"\n".join(lines), at + 1


def leading_statements(tree: ast.Module, imports: bool = False) -> list:
    """The docstring and the ``from __future__`` imports that open the module (``imports``: and
    every import statement up to the first other statement), and bare names among them: a name
    alone does nothing in Python, while in a notebook cell it masks an IPython line
    (gpu2npu.filekinds._ipython) such as ``%pip install torch_npu``, which must run first."""
    leading = []
    for position, statement in enumerate(tree.body):
        docstring = (
            position == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        )
        future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
        other_import = imports and isinstance(statement, (ast.Import, ast.ImportFrom))
        bare_name = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Name)
        if not (
            docstring or future or other_import or bare_name or (imports and _sets_environment(statement))
        ):
            break
        leading.append(statement)
    while imports and leading and _sets_environment(leading[-1]):
        leading.pop()  # only an import after it makes it part of the imports
    return leading


def _sets_environment(statement: ast.stmt) -> bool:
    """``os.environ["PYTORCH_CUDA_ALLOC_CONF"] = ...`` (or ``os.environ.setdefault(...)``, ``.update``,
    ``os.putenv``) among the imports: set before ``import torch`` on purpose, as the allocator and
    the runtime read it once, at their first use (nanochat's base_train.py)."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
        return all(isinstance(t, ast.Subscript) and dotted(t.value) in ENVIRONMENTS for t in targets)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        name = dotted(statement.value.func) or ""
        return name.rsplit(".", 1)[0] in ENVIRONMENTS or name in ("os.putenv", "putenv")
    return False
