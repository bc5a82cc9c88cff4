"""The skeleton of a file: what libcst must parse of it. Parsing was the largest cost of a cold
run left once the pass stopped walking statements no rule can touch (gpu2npu.rewrite.skipping);
those statements need not be parsed either.

Each statement the skipper would leave unvisited is replaced by a stub holding its lines, at its
indentation: ``__gpu2npu_skipped_7__`` on one line; on several, that name assigned a triple-quoted
string of the statement's line ends (one string node, however many lines). Line numbers stay
those of the file, so the changes are reported where they are; after the pass, each stub is
replaced by the statement it holds.

Kept whole: the module docstring (imports are inserted below it). The methods each class defines,
which the pass reads, come with the skeleton. Files that are not UTF-8 have no skeleton.
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
from typing import Dict, List, Optional, Set

from gpu2npu.rewrite.skipping import LINE_END, first_line, hot_lines, statement_blocks
from gpu2npu.source.parse import module_nodes

STUB_NAME = "__gpu2npu_skipped_"
INDENT = re.compile(r"[ \t\f]*")
STUB = re.compile(r'__gpu2npu_skipped_(\d+)__ = """(?:\r\n|\n)*"""|__gpu2npu_skipped_(\d+)__')
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Skeleton:
    def __init__(self, data: bytes, stubs: List[str], held: List[str], class_methods: Dict[int, Set[str]]):
        self.data = data  # the skeleton's bytes, for libcst
        self.class_methods = class_methods  # first line of each class -> the methods it defines
        self._stubs = stubs  # stub n's text
        self._held = held  # the text stub n holds

    def restore(self, code: bytes) -> Optional[bytes]:
        """The pass's output with each stub replaced by what it holds; None if a stub is not
        found exactly once, as written (the caller then parses the whole file)."""
        found: List[int] = []

        def held(match: re.Match) -> str:
            number = int(match.group(1) or match.group(2))
            if number >= len(self._stubs) or match.group(0) != self._stubs[number]:
                found.append(-1)
                return match.group(0)
            found.append(number)
            return self._held[number]

        text = STUB.sub(held, code.decode("utf-8"))
        if sorted(found) != list(range(len(self._stubs))):
            return None
        return text.encode("utf-8")


def source_skeleton(data: bytes, tree: Optional[ast.Module], triggers) -> Optional[Skeleton]:
    """The skeleton of a file, or None where libcst must parse all of it (nothing to leave
    out, not UTF-8, a stub's name in the file, or no skipper for it)."""
    source = _utf8_text(data) if tree is not None and tree.body and STUB_NAME.encode() not in data else None
    if source is None:
        return None
    hot = hot_lines(source, tree, triggers)
    if hot is None:
        return None
    starts = [0] + [match.end() for match in LINE_END.finditer(source)]
    builder = _Builder(source, starts, hot)
    body = tree.body
    if _is_docstring(body[0]):
        body = body[1:]
    if source[builder.line_end(body[-1].end_lineno) if body else 0 :].strip("\r\n"):
        # Comments or spaces after the last statement: libcst gives some back short after a
        # simple statement (a stub), not after a compound one; the last statement is kept.
        body = body[:-1]
    builder.block(body)
    if not builder.stubs:
        return None
    classes = (node for node in module_nodes(tree) if isinstance(node, ast.ClassDef))
    class_methods = {
        first_line(node): {s.name for s in node.body if isinstance(s, FUNCTIONS)} for node in classes
    }
    return Skeleton(builder.text().encode("utf-8"), builder.stubs, builder.held, class_methods)


def _utf8_text(data: bytes) -> Optional[str]:
    """The file's text when it is plain UTF-8 (no BOM, no other declared encoding), else None."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode("utf-8")
    except (SyntaxError, UnicodeDecodeError):
        return None
    return text if encoding == "utf-8" else None


class _Builder:
    """The stubs of one file, chosen block by block from the stdlib ast."""

    def __init__(self, source: str, starts: List[int], hot: List[int]):
        self._source = source
        self._starts = starts  # offset of each line's start (line n at starts[n - 1])
        self._hot = hot
        self.stubs: List[str] = []
        self.held: List[str] = []
        self._spans: List[tuple] = []  # (start offset, end offset, stub)

    def block(self, statements: List[ast.stmt]) -> None:
        """Stubs for the block's statements no rule can touch: one for each run of them (with
        the comments between), so that the pass meets one node where there were many."""
        pending: Optional[List[int]] = None  # first and last line of the stub being grown
        for run in _runs(statements):
            first, last = first_line(run[0]), run[-1].end_lineno
            if self._starts_line(run[0]) and not self._touches_hot(first, last):
                pending = [pending[0] if pending else first, last]
                continue
            if pending:
                self._stub(*pending)
                pending = None
            if not self._starts_line(run[0]):
                continue  # after a docstring on its line: kept whole
            compound = len(run) == 1 and statement_blocks(run[0])
            if compound and self._own_lines(run[0]):
                for block in compound:
                    self.block(block)
        if pending:
            self._stub(*pending)

    def text(self) -> str:
        pieces, position = [], 0
        for start, end, stub in sorted(self._spans):  # blocks are read handlers last, not in order
            pieces += [self._source[position:start], stub]
            position = end
        pieces.append(self._source[position:])
        return "".join(pieces)

    def _touches_hot(self, first: int, last: int) -> bool:
        at = bisect.bisect_left(self._hot, first)
        return at < len(self._hot) and self._hot[at] <= last

    def _own_lines(self, statement: ast.stmt) -> bool:
        """Whether each block of a compound statement starts on a line of its own (else one is a
        suite on the header's line: ``if x: y``, which is kept whole)."""
        return all(self._starts_line(block[0]) for block in statement_blocks(statement))

    def _starts_line(self, statement: ast.stmt) -> bool:
        line_start = self._starts[first_line(statement) - 1]
        decorators = getattr(statement, "decorator_list", None)
        column = decorators[0].col_offset - 1 if decorators else statement.col_offset  # at the @
        return self._source[line_start : line_start + column].strip() == ""

    def _stub(self, first: int, last: int) -> None:
        start = INDENT.match(self._source, self._starts[first - 1]).end()
        end = self.line_end(last)
        held = self._source[start:end]
        number = len(self.stubs)
        name = f"{STUB_NAME}{number}__"
        breaks = [match.group(0) for match in LINE_END.finditer(held)]
        stub = f'{name} = """{"".join(breaks)}"""' if breaks else name  # one node, whatever its lines
        self.stubs.append(stub)
        self.held.append(held)
        self._spans.append((start, end, stub))

    def line_end(self, line: int) -> int:
        """Offset of the line end (or the file end) of ``line``."""
        end = self._starts[line] if line < len(self._starts) else len(self._source)
        text = self._source[self._starts[line - 1] : end]
        return end - (len(text) - len(text.rstrip("\r\n")))


def _runs(statements: List[ast.stmt]) -> List[List[ast.stmt]]:
    """Statements grouped as libcst's statement lines: simple statements sharing a line
    (``a = 1; b = 2``) together, each compound statement alone."""
    runs: List[List[ast.stmt]] = []
    for statement in statements:
        simple = not statement_blocks(statement)
        if (
            runs
            and simple
            and not statement_blocks(runs[-1][-1])
            and statement.lineno == runs[-1][-1].end_lineno
        ):
            runs[-1].append(statement)
        else:
            runs.append([statement])
    return runs


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )
