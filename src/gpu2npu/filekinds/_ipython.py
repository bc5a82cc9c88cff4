"""IPython syntax in a notebook's code cells: found, masked for the Python engine, put back.

A code cell is Python plus IPython's escapes, which are no Python: line magics (``%time x``),
shell lines (``!nvidia-smi``, ``files = !ls``), help (``x?``), autocall escapes (``/f x``), and
a cell magic on the first line (``%%time``, ``%%bash``). IPython only sees an escape at the
start of a logical line, so the lines are read with a small lexer that knows when a line is
inside a string or a bracket (a ``%d`` line in a triple-quoted string is text).

Each escaped line becomes a placeholder line, indented like it: a bare name the rules never
touch, so the cell keeps its line count and parses. After the migration each placeholder line
is replaced by the original text (or by that text with its own edits: an environment variable
renamed in ``%env``). ``%time`` and ``%timeit`` take a Python statement: that statement stays in
the masked cell, tagged with a comment, so it is migrated too, and the magic is put back in
front of it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

PLACEHOLDER = "_gpu2npu_ipython_{}_"
CODE_TAG = "  #_gpu2npu_magic_{}_"
# A line the migration gave back: a placeholder, or a %time statement with its tag.
PLACEHOLDER_LINE = re.compile(r"[ \t]*_gpu2npu_ipython_(\d+)_")
TAGGED_LINE = re.compile(r"(.*)  #_gpu2npu_magic_(\d+)_")

# Cell magics whose body is Python run in the notebook's namespace (migrated with the rest).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "memit", "debug"})
# Cell magics whose body is a shell script.
SHELL_CELL_MAGICS = frozenset({"bash", "sh", "sx", "system", "!"})
SHELLS = frozenset({"bash", "sh", "zsh", "ksh", "dash"})
SHELL_LINE_MAGICS = frozenset({"sx", "system"})
ENV_LINE_MAGICS = frozenset({"env", "set_env"})
CODE_LINE_MAGICS = frozenset({"time", "timeit"})

PYTHON, SHELL, OTHER = "python", "shell", "other"  # what a cell is

_TARGETS = r"[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*"
ASSIGNED_ESCAPE = re.compile(rf"\s*{_TARGETS}\s*=\s*(?=[!%])")  # files = !ls, t = %timeit -o f()
HELP = re.compile(r"\s*(?:\?{1,2}.*|%{0,2}[A-Za-z_*][\w*]*(?:\.[A-Za-z_*][\w*]*|\[[^\]\n]*\])*\s*\?{1,2})\s*")
MAGIC_NAME = re.compile(r"%{1,2}([\w!]*)")
# %timeit's options before the statement: -n 10 -r 3 -t -c -q -o -p 4
TIMEIT_OPTIONS = re.compile(r"(?:-[nrp]\s*\d+\s+|-[tcqo]\s+)*")


@dataclass
class Escape:
    """One line IPython reads as an escape (or the continuation of one)."""

    text: str  # the line as written (no line end)
    shell_from: Optional[int] = None  # where its shell command starts, for a shell line
    env_from: Optional[int] = None  # where a %env line's variable name starts
    code_prefix: str = ""  # for %time: the text before the statement ("%timeit -n 10 ")


@dataclass
class MaskedCell:
    """A code cell's lines as the Python engine sees them, and what to put back."""

    kind: str  # PYTHON, SHELL or OTHER
    lines: List[str]  # the original lines, without "\n" (a "\r" stays)
    masked: List[str] = field(default_factory=list)  # same count; PYTHON cells only
    escapes: Dict[int, Escape] = field(default_factory=dict)  # by line index
    restored: Dict[int, str] = field(default_factory=dict)  # an escape's text after its own edits

    @property
    def masked_text(self) -> str:
        return "\n".join(self.masked)

    def shell_lines(self) -> List[Tuple[int, int]]:
        """(line index, where the shell command starts) of every line of shell."""
        if self.kind == SHELL:
            return [(index, 0) for index in range(1, len(self.lines))]
        return [(i, e.shell_from) for i, e in sorted(self.escapes.items()) if e.shell_from is not None]

    def restore(self, new_text: str) -> List[str]:
        """The lines of the migrated masked text with each escape put back."""
        lines = []
        for line in new_text.split("\n"):
            body, carriage = _without_carriage(line)
            placeholder = PLACEHOLDER_LINE.fullmatch(body)
            tagged = TAGGED_LINE.fullmatch(body) if placeholder is None else None
            if placeholder is not None and int(placeholder.group(1)) in self.escapes:
                line = self.current(int(placeholder.group(1)))  # the line holds its own "\r"
            elif tagged is not None and int(tagged.group(2)) in self.escapes:
                escape = self.escapes[int(tagged.group(2))]
                code = tagged.group(1)
                indent = len(code) - len(code.lstrip(" \t"))
                line = code[:indent] + escape.code_prefix + code[indent:] + carriage
            lines.append(line)
        return lines

    def current(self, index: int) -> str:
        """The line ``index`` as written, or after the notebook's own edits of it."""
        return self.restored.get(index, self.lines[index])


def mask_cell(text: str) -> MaskedCell:
    """The cell's lines read as IPython reads them."""
    lines = text.split("\n")
    first = _without_carriage(lines[0])[0].strip()
    if first.startswith("%%"):
        name, argument = _magic_name(first), first[2:].split(None, 2)
        if name in SHELL_CELL_MAGICS or (name == "script" and len(argument) > 1 and argument[1] in SHELLS):
            return MaskedCell(SHELL, lines)
        if name not in PYTHON_CELL_MAGICS:
            return MaskedCell(OTHER, lines)
    cell = MaskedCell(PYTHON, lines)
    state = _Lexer()
    continued: Optional[Escape] = None  # an escape that goes on (a trailing "\\")
    indent = ""
    for index, line in enumerate(lines):
        body, carriage = _without_carriage(line)
        if continued is not None:
            shell_from = 0 if continued.shell_from is not None else None
            cell.escapes[index] = Escape(line, shell_from=shell_from)
            cell.masked.append(indent + PLACEHOLDER.format(index) + carriage)
            continued = continued if body.endswith("\\") else None
            continue
        escape = _escape(body) if state.at_statement_start else None
        if escape is None:
            cell.masked.append(line)
            state.read(body)
            continue
        escape.text = line
        cell.escapes[index] = escape
        indent = body[: len(body) - len(body.lstrip(" \t"))]
        if escape.code_prefix:
            code = body[len(indent) + len(escape.code_prefix) :]
            cell.masked.append(indent + code + CODE_TAG.format(index) + carriage)
        else:
            cell.masked.append(indent + PLACEHOLDER.format(index) + carriage)
        continued = escape if body.endswith("\\") and not escape.code_prefix else None
    return cell


def _escape(body: str) -> Optional[Escape]:
    """The escape a line at the start of a statement is, or None for a line of Python."""
    stripped = body.lstrip(" \t")
    if not stripped or stripped.startswith("#"):
        return None
    assigned = ASSIGNED_ESCAPE.match(body)
    start = assigned.end() if assigned else len(body) - len(stripped)
    lead = body[start]
    if lead == "!":
        return Escape(body, shell_from=start + (2 if body.startswith("!!", start) else 1))
    if lead == "%":
        return _magic(body, start, assigned is not None)
    if not assigned and (lead in "/,;?" or HELP.fullmatch(body)):
        return Escape(body)
    return None


def _magic(body: str, start: int, assigned: bool) -> Escape:
    match = MAGIC_NAME.match(body, start)
    name, after = match.group(1), _skip_blanks(body, match.end())
    if body.startswith("%%", start):
        return Escape(body)  # a cell magic's line (its body was decided by mask_cell)
    if name in SHELL_LINE_MAGICS:
        return Escape(body, shell_from=after)
    if name in ENV_LINE_MAGICS:
        return Escape(body, env_from=after)
    if name in CODE_LINE_MAGICS and not assigned:
        options = TIMEIT_OPTIONS.match(body, after) if name == "timeit" else None
        code_from = options.end() if options else after
        if _is_statement(body[code_from:]):
            return Escape(body, code_prefix=body[start:code_from])
    return Escape(body)


def _is_statement(code: str) -> bool:
    if not code.strip() or code.rstrip().endswith("\\"):
        return False
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _magic_name(line: str) -> str:
    return MAGIC_NAME.match(line).group(1)


def _skip_blanks(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t":
        position += 1
    return position


def _without_carriage(line: str) -> Tuple[str, str]:
    return (line[:-1], "\r") if line.endswith("\r") else (line, "")


class _Lexer:
    """Enough of Python's lexer to know whether the next line starts a statement: open strings
    (a triple-quoted one, or a quoted one continued with a backslash), brackets, continuations."""

    def __init__(self) -> None:
        self.quote = ""  # the quote of the string that is open at the end of the line
        self.depth = 0
        self.continued = False

    @property
    def at_statement_start(self) -> bool:
        return not self.quote and not self.depth and not self.continued

    def read(self, line: str) -> None:
        position = 0
        self.continued = False
        while position < len(line):
            if self.quote:
                position = self._in_string(line, position)
                continue
            found = _LEXED.search(line, position)
            if found is None or found.group() == "#":
                break
            char, position = found.group(), found.end()
            if char in "'\"":
                self.quote = char * 3 if line.startswith(char * 3, found.start()) else char
                position = found.start() + len(self.quote)
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            elif char == "\\" and position == len(line):
                self.continued = True
        if len(self.quote) == 1 and not line.endswith("\\"):
            self.quote = ""  # an unterminated one-line string: the parser will say so

    def _in_string(self, line: str, position: int) -> int:
        """Past the string's end on this line, or the line's end (the string goes on)."""
        for found in _STRING_END[self.quote].finditer(line, position):
            if found.group() == self.quote:
                self.quote = ""
                return found.end()
        return len(line)


# What the lexer stops at: outside strings, and inside each kind of string (an escape, the end).
_LEXED = re.compile(r"[#'\"()\[\]{}\\]")
_STRING_END = {quote: re.compile(r"\\.|" + re.escape(quote)) for quote in ("'", '"', "'''", '"""')}
