"""Statements the rewrite pass need not walk: most lines of a file that needs the pass at all
touch nothing a rule can change, and walking their libcst nodes was half of a cold run.

A statement (a simple statement line, or a whole compound statement: a def, a class, an if...)
is left unvisited when none of its lines holds an import, a trigger word of the tree rules (the
words every spelling of a rule's target contains, as for whole files) or one of the file's
*sensitive names*:

* names an import binds to a target that holds a trigger word (``from torch.cuda import
  synchronize as s``: ``s()`` is a use of torch.cuda without the word);
* names an import binds that the file binds otherwise too (``torch = None``): the pass tracks
  such shadowing, which it must see.

A file with a star import of a target holding a trigger word, or with lone CR line ends (whose
lines the stdlib ast and libcst may count apart), has every line walked.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from gpu2npu.source.imports import STAR, imported_names
from gpu2npu.source.parse import module_nodes

LINE_END = re.compile(r"\r\n|\n")
IMPORT_WORD = re.compile(r"\bimport\b")
# The match statement's patterns that bind names; Python 3.9's ast has none (nor match statements).
CAPTURE_PATTERNS = tuple(getattr(ast, name) for name in ("MatchAs", "MatchStar") if hasattr(ast, name))
MAPPING_PATTERNS = tuple(getattr(ast, name) for name in ("MatchMapping",) if hasattr(ast, name))


class StatementSkipper:
    """Which statements of one file the pass may leave unvisited."""

    def __init__(self, simple: Dict[int, int], compound: Dict[int, int], hot_lines: List[int]):
        self._simple = simple  # first line of a simple statement line -> its last line
        self._compound = compound  # first line of a compound statement -> its last statement's last line
        self._hot = hot_lines  # sorted lines holding an import, a trigger word or a sensitive name

    def last_line(self, node: cst.CSTNode, start: int) -> Optional[int]:
        """The last line (comments below its block included) of the statement starting at line
        ``start`` when it may be skipped; else None."""
        if type(node) is cst.SimpleStatementLine:
            end = self._simple.get(start)
        elif isinstance(node, cst.BaseCompoundStatement):
            end = self._compound.get(start)
            end = end + _footer_lines(node) if end is not None else None
        else:
            return None
        if end is None:
            return None
        first_hot = bisect.bisect_left(self._hot, start)
        if first_hot < len(self._hot) and self._hot[first_hot] <= end:
            return None
        return end


def statement_skipper(source: str, tree: Optional[ast.AST], triggers) -> Optional[StatementSkipper]:
    """The skipper of a file, or None where every line must be walked."""
    hot = hot_lines(source, tree, triggers)
    return StatementSkipper(*_statement_ends(tree), hot) if hot is not None else None


def hot_lines(source: str, tree: Optional[ast.AST], triggers) -> Optional[List[int]]:
    """The sorted lines holding an import, a trigger word or a sensitive name; None where every
    line must be walked."""
    if tree is None or triggers is None or "\r" in LINE_END.sub("", source):
        return None
    imported: Dict[str, str] = {}
    bound_otherwise: Set[str] = set()
    for node in module_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in imported_names(node):
                if name.local == STAR:
                    if name.qualified is None or triggers.search(name.qualified + "("):
                        return None
                elif name.qualified is not None:
                    # "(": a trigger of calls (``device(``) matches the target called by its alias
                    imported[name.local] = imported.get(name.local, "") + f" {name.qualified}("
        else:
            bound_otherwise.update(_bound_names(node))
    sensitive = {local for local, targets in imported.items() if triggers.search(targets)}
    sensitive |= bound_otherwise & imported.keys()
    starts = [0] + [match.end() for match in LINE_END.finditer(source)]
    return _hot_lines(source, starts, [triggers, IMPORT_WORD, _words(sensitive)])


def _bound_names(node: ast.AST) -> Iterable[str]:
    """Names a node binds other than by importing."""
    if isinstance(node, ast.Name):
        return (node.id,) if not isinstance(node.ctx, ast.Load) else ()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (node.name,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return node.names
    if isinstance(node, ast.ExceptHandler):
        return (node.name,) if node.name else ()
    if isinstance(node, CAPTURE_PATTERNS):
        return (node.name,) if node.name else ()
    if isinstance(node, MAPPING_PATTERNS):
        return (node.rest,) if node.rest else ()
    return ()


def _words(names: Set[str]):
    if not names:
        return None
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")


def _hot_lines(source: str, starts: List[int], patterns) -> List[int]:
    """Sorted line numbers (1-based) that a match of one of the patterns touches."""
    hot: Set[int] = set()
    for pattern in patterns:
        if pattern is None:
            continue
        for match in pattern.finditer(source):
            first = bisect.bisect_right(starts, match.start())
            last = bisect.bisect_right(starts, max(match.end() - 1, match.start()))
            hot.update(range(first, last + 1))
    return sorted(hot)


def _statement_ends(tree: ast.AST) -> Tuple[Dict[int, int], Dict[int, int]]:
    """First line -> last line of each simple statement line (a run of simple statements one
    line of source starts: ``a = 1; b = (2,\\n 3)``) and of each compound statement (from its
    first decorator)."""
    simple: Dict[int, int] = {}
    compound: Dict[int, int] = {}
    bodies = [tree.body]
    while bodies:
        run_start = run_end = None
        for statement in bodies.pop():
            blocks = statement_blocks(statement)
            if blocks:
                compound[first_line(statement)] = statement.end_lineno
                bodies.extend(blocks)
                run_start = None
            elif run_start is not None and statement.lineno == run_end:
                run_end = simple[run_start] = statement.end_lineno
            else:
                run_start, run_end = statement.lineno, statement.end_lineno
                simple[run_start] = run_end
    return simple, compound


def first_line(statement: ast.stmt) -> int:
    """The line a statement starts on: its first decorator's, if it has some."""
    decorators = getattr(statement, "decorator_list", None)
    return decorators[0].lineno if decorators else statement.lineno


def statement_blocks(statement: ast.stmt) -> List[List[ast.stmt]]:
    """The statement lists of a compound statement ([] for a simple one)."""
    blocks = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(statement, "handlers", ())]
    blocks += [case.body for case in getattr(statement, "cases", ())]
    return [block for block in blocks if isinstance(block, list) and block]


def _footer_lines(node: cst.CSTNode) -> int:
    """Lines of comments (and blank lines) after the last statement of a compound statement that
    libcst keeps in its blocks' footers, which the stdlib ast's end line leaves out."""
    lines = 0
    while isinstance(node, cst.BaseCompoundStatement):
        block = _last_block(node)
        if not isinstance(block, cst.IndentedBlock):
            break  # a one-line suite
        lines += len(block.footer)
        node = block.body[-1]
    return lines


def _last_block(node: cst.BaseCompoundStatement):
    """The block a compound statement ends with (its else, finally, last handler or case...)."""
    for field in ("finalbody", "orelse"):
        clause = getattr(node, field, None)
        if clause is not None:
            return clause.body if not isinstance(clause, cst.If) else _last_block(clause)
    handlers = getattr(node, "handlers", ())
    if handlers:
        return handlers[-1].body
    cases = getattr(node, "cases", ())
    if cases:
        return cases[-1].body
    return node.body
