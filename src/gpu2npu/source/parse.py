"""Parsing a file's bytes, and the one wording for files that cannot be parsed.

A migration copies such files unchanged and an analysis lists them; both say why in the same
words, which do not depend on the Python version running the tool.

Limits, so that no file can take the process down: brackets nested deeper than Python's own
limit (200) never reach libcst (whose native parser would overflow the C stack on them); a
syntax tree deeper than MAX_DEPTH levels (real code stays under 60) is not rewritten; the
recursion limit is raised to RECURSION_LIMIT so that the tree walks of libcst and of our
readers get through MAX_DEPTH levels of any kind of node.
"""

from __future__ import annotations

import ast
import itertools
import sys
import warnings
from typing import Iterator, List, Optional

import libcst as cst

# The warnings Python gives about the code it compiles ("is" with a literal, invalid escapes)
# are about the user's files, not the tool's: every process that parses imports this module.
warnings.filterwarnings("ignore", category=SyntaxWarning)

PARSE_ERRORS = (
    cst.ParserSyntaxError,
    UnicodeDecodeError,
    LookupError,
    SyntaxError,
    RecursionError,
    MemoryError,
)
COPIED = "; copied unchanged"  # what a migration does with a file it cannot parse
NOT_COPIED = "; not copied"  # ... and with one it cannot read


def reason_alone(skipped: str) -> str:
    """Why a file was skipped, without what the migration did with it (for reading-only runs)."""
    for action in (COPIED, NOT_COPIED):
        if skipped.endswith(action):
            return skipped[: -len(action)]
    return skipped


MAX_DEPTH = 500  # levels of the syntax tree
RECURSION_LIMIT = 10_000
TOO_DEEP = f"nesting deeper than {MAX_DEPTH} levels, the limit of gpu2npu"
TOO_MANY_BRACKETS = "brackets nested deeper than 200 levels, the limit of Python's parser"


def allow_deep_syntax() -> None:
    """Let the tree walks get through MAX_DEPTH levels (Python functions calling each other
    use no C stack from Python 3.11 on, so a higher limit is safe)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))


def parse_ast(data: bytes) -> Optional[ast.Module]:
    """The file's stdlib syntax tree, or None (shared by every consumer of a file, so a file is
    parsed by ast at most once); None too for a tree deeper than MAX_DEPTH."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree if syntax_depth(tree) <= MAX_DEPTH else None


def module_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a file's whole tree in ``ast.walk``'s order, listed once and kept on the tree:
    its many readers (kept code, imports, facts, the rewrite's skipper) share one traversal, and
    this loop is twice as fast as ``ast.walk``. For whole trees only (a list is kept per tree)."""
    below: Optional[List[ast.AST]] = getattr(tree, "_gpu2npu_nodes", None)
    if below is None:
        found = [tree]
        for node in found:  # the list grows as it is read: breadth first, as ast.walk
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    found.extend(item for item in value if isinstance(item, ast.AST))
                elif isinstance(value, ast.AST):
                    found.append(value)
        below = tree._gpu2npu_nodes = found[1:]  # without the tree itself: no reference cycle
    return itertools.chain((tree,), below)


def syntax_depth(tree: ast.AST, stop: int = MAX_DEPTH + 1) -> int:
    """Levels of ``tree`` (without recursion), counted up to ``stop`` -- or a bound of them below
    ``stop``. A node on one line of ``width`` characters holds fewer than ``3 * width + 3`` levels
    (each level takes a character, or wraps one that does: a context, a keyword, an argument
    list), so where that bound stays below ``stop`` the node is not walked: most of a file is
    short lines, and walking every node cost about a fifth of a migration."""
    deepest, pending = 0, [(tree, 1)]
    while pending and deepest < stop:
        node, depth = pending.pop()
        bound = _one_line_bound(node, depth)
        if bound < stop:
            deepest = max(deepest, bound)
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _one_line_bound(node: ast.AST, depth: int) -> int:
    """An upper bound of the deepest level under a node that sits on one line; a large number
    for others."""
    line = getattr(node, "lineno", None)
    if line is None or getattr(node, "end_lineno", None) != line:
        return sys.maxsize
    return depth + 3 * (node.end_col_offset - node.col_offset) + 3


def unreadable_reason(data: bytes) -> str:
    """Why a file is not valid Python 3 or too deep to rewrite ('' when it is fine). The stdlib
    compiler answers quickly; libcst decides when this Python is older than the file's syntax."""
    try:
        tree = compile(data, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return TOO_DEEP if syntax_depth(tree) > MAX_DEPTH else ""
    except SyntaxError as exc:
        if "too many nested parentheses" in str(exc):
            return TOO_MANY_BRACKETS  # never handed to libcst, whose parser would crash on it
    except (RecursionError, MemoryError):
        return TOO_DEEP
    except (ValueError, UnicodeDecodeError):
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
    if isinstance(exc, (RecursionError, MemoryError)):
        return TOO_DEEP
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


def function_scopes(tree: ast.AST) -> Iterator[ast.AST]:
    """The module and every function of it: the scopes a name is bound and read in."""
    yield tree
    for node in module_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
