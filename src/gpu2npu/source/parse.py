"""Parsing a file's bytes, and the one wording for files that cannot be parsed.

A migration copies such files unchanged and an analysis lists them; both say why in the same
words, which do not depend on the Python version running the tool.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

PARSE_ERRORS = (cst.ParserSyntaxError, UnicodeDecodeError, LookupError, SyntaxError)
COPIED = "; copied unchanged"  # what a migration does with a file it cannot parse


def parse_ast(data: bytes) -> Optional[ast.Module]:
    """The file's stdlib syntax tree, or None (shared by every consumer of a file, so a file is
    parsed by ast at most once)."""
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError):
        return None


def unreadable_reason(data: bytes) -> str:
    """Why a file is not valid Python 3 ('' when it is). The stdlib compiler answers quickly;
    libcst decides when this Python is older than the file's syntax."""
    try:
        compile(data, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return ""
    except (SyntaxError, ValueError, UnicodeDecodeError):
        pass
    try:
        cst.parse_module(data)
        return ""
    except PARSE_ERRORS as exc:
        return parse_failure(data, exc)


def parse_failure(data: bytes, exc: Exception) -> str:
    """The reason libcst's error gives, in words that are the same on every Python version."""
    if isinstance(exc, cst.ParserSyntaxError):
        return f"cannot be parsed as Python 3 ({_syntax_problem(data, exc)})"
    return f"cannot be decoded ({exc})"


def _syntax_problem(data: bytes, exc: cst.ParserSyntaxError) -> str:
    """Where parsing failed: Python's line number (its wording of the error varies between
    Python versions, the line does not, so reports stay the same on every machine)."""
    try:
        compile(data, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return f"syntax error at line {error.lineno}"
    except ValueError:
        pass
    return f"syntax error near line {exc.raw_line}"


def count_lines(data: bytes) -> int:
    return data.count(b"\n")
