"""Migrating the bytes of one Python file: decide, parse once, transform once, check."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import List, Optional

import libcst as cst

from gpu2npu.rewrite.changes import Change
from gpu2npu.rewrite.transformer import MigrationTransformer, ProjectFacts


@dataclass
class SourceResult:
    new_bytes: Optional[bytes] = None  # None: the file stays byte-identical
    changes: List[Change] = field(default_factory=list)
    skipped: str = ""  # why the file could not be migrated (it is then copied unchanged)


def migrate_source(data: bytes, index, project: Optional[ProjectFacts] = None, path: str = "<file>") -> SourceResult:
    if not index.needs_rewrite(data):
        return SourceResult(skipped=_unreadable_reason(data))
    try:
        module = cst.parse_module(data)
    except cst.ParserSyntaxError as exc:
        return SourceResult(skipped=f"cannot be parsed as Python 3 ({_syntax_problem(data, exc)}); copied unchanged")
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        return SourceResult(skipped=f"cannot be decoded ({exc}); copied unchanged")
    transformer = MigrationTransformer(index, module, project)
    new_module = module.visit(transformer)
    if not transformer.changes:
        return SourceResult()
    new_bytes = new_module.bytes
    if new_bytes == data:
        return SourceResult()
    problem = _compile_problem(new_module.code, module.code, path)
    if problem:
        return SourceResult(skipped=f"internal error: the rewritten file would not compile ({problem}); kept unchanged")
    return SourceResult(new_bytes=new_bytes, changes=sorted(transformer.changes))


def _unreadable_reason(data: bytes) -> str:
    """Why a file no rule applies to is not valid Python 3 ('' when it is): such files are copied
    unchanged anyway, but the report must still name them. The stdlib compiler answers quickly;
    libcst decides when this Python is older than the file's syntax."""
    try:
        compile(data, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return ""
    except (SyntaxError, ValueError, UnicodeDecodeError):
        pass
    try:
        cst.parse_module(data)
        return ""
    except cst.ParserSyntaxError as exc:
        return f"cannot be parsed as Python 3 ({_syntax_problem(data, exc)}); copied unchanged"
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        return f"cannot be decoded ({exc}); copied unchanged"


def _syntax_problem(data: bytes, exc: cst.ParserSyntaxError) -> str:
    """Python's own wording of the error when it has one (clearer than the parser's)."""
    try:
        compile(data, "<file>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except ValueError:
        pass
    return f"line {exc.editor_line}, column {exc.editor_column}"


def _compile_problem(new_code: str, old_code: str, path: str) -> str:
    """Why the rewrite does not compile, if the original did; '' when all is well."""
    try:
        compile(new_code, path, "exec", dont_inherit=True)
        return ""
    except SyntaxError as exc:
        try:
            compile(old_code, path, "exec", dont_inherit=True)
        except SyntaxError:
            return ""  # this Python cannot compile the original either: nothing to compare
        return f"line {exc.lineno}: {exc.msg}"
