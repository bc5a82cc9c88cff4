"""Where each cell's ``source`` is in a notebook's JSON text, and edits of it that keep the layout.

The notebook is never written out again from its parsed form: a small walk over the text finds
the span of each cell's ``source`` value (a list of strings, one per line, as nbformat writes
it, or one string), skipping every other value with the json module's own scanner (fast on a
megabyte of image output). A changed source is written back by editing only the strings of
the lines that changed, encoded like the file (``\\u00e9`` escapes or raw UTF-8) and separated
like the array's other elements, so a diff of the notebook shows only the code change.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from dataclasses import dataclass
from json.decoder import scanstring
from typing import List, Optional, Tuple

_BLANKS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
# A \u escape of a character outside ASCII (an even number of backslashes before it).
_ESCAPED_NON_ASCII = re.compile(r"(?<!\\)(?:\\\\)*\\u(?!00[0-7])[0-9a-fA-F]{4}")

Edit = Tuple[int, int, str]  # (start, end, new text): character offsets in the notebook's text


@dataclass
class JsonString:
    start: int  # the opening quote
    end: int  # after the closing quote
    value: str


@dataclass
class CellSource:
    """One cell as the text holds it."""

    cell_type: str
    start: int  # the span of the source value
    end: int
    strings: List[JsonString]  # the list's elements, or the one string
    is_list: bool

    @property
    def text(self) -> str:
        return "".join(string.value for string in self.strings)

    def string_at(self, offset: int) -> JsonString:
        """The element holding the character at ``offset`` of the cell's text."""
        starts, total = [], 0
        for string in self.strings:
            starts.append(total)
            total += len(string.value)
        return self.strings[max(bisect.bisect_right(starts, offset) - 1, 0)]


class NotebookText:
    """The notebook's text with its cells' sources located, and how it writes JSON strings."""

    def __init__(self, text: str):
        self.text = text
        start = 1 if text.startswith("\ufeff") else 0
        self.cells = _cells(text, _skip_blanks(text, start))
        self.newline = "\r\n" if "\r\n" in text[:4096] else "\n"
        self._line_starts: Optional[List[int]] = None
        self._escaping: Optional[bool] = None

    def line_of(self, offset: int) -> int:
        """The 1-based line of a character offset."""
        if self._line_starts is None:
            starts, position = [0], self.text.find("\n")
            while position != -1:
                starts.append(position + 1)
                position = self.text.find("\n", position + 1)
            self._line_starts = starts
        return bisect.bisect_right(self._line_starts, offset)

    def escapes_non_ascii(self, cell: CellSource) -> bool:
        """Whether strings are written with \\u escapes: as the cell's own strings are where they
        hold a character outside ASCII, else as the file is (nbformat itself writes raw UTF-8)."""
        for string in cell.strings:
            if not string.value.isascii():
                return self.text[string.start : string.end].isascii()
        if self._escaping is None:
            self._escaping = self.text.isascii() and _ESCAPED_NON_ASCII.search(self.text) is not None
        return self._escaping

    def source_edits(self, cell: CellSource, new_text: str) -> List[Edit]:
        """Edits that make the cell's source ``new_text``, touching only the lines that change."""
        if new_text == cell.text:
            return []
        ascii_only = self.escapes_non_ascii(cell)

        def encode(value: str) -> str:
            return json.dumps(value, ensure_ascii=ascii_only)

        if not cell.is_list:
            return [(cell.start, cell.end, encode(new_text))]
        old, new = [s.value for s in cell.strings], split_lines(new_text)
        separator = self._separator(cell)
        if not old or old != split_lines(cell.text):  # an empty list, or one not split per line
            return [(cell.start, cell.end, self._array(cell, [encode(line) for line in new], separator))]
        edits = []
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            written = separator.join(encode(line) for line in new[j1:j2])
            strings = cell.strings
            if tag == "replace":
                edits.append((strings[i1].start, strings[i2 - 1].end, written))
            elif tag == "insert" and i1 < len(strings):
                edits.append((strings[i1].start, strings[i1].start, written + separator))
            elif tag == "insert":
                edits.append((strings[-1].end, strings[-1].end, separator + written))
            elif i2 < len(strings):  # delete, followed by a line that stays
                edits.append((strings[i1].start, strings[i2].start, ""))
            elif i1 > 0:  # delete the last lines
                edits.append((strings[i1 - 1].end, strings[i2 - 1].end, ""))
            else:
                edits.append((cell.start, cell.end, "[]"))
        return edits

    def _separator(self, cell: CellSource) -> str:
        """What separates two strings of the list: as between its first two, else as between
        ``[`` and its first one, else as nbformat writes it (indent 1)."""
        strings = cell.strings
        if len(strings) > 1:
            return self.text[strings[0].end : strings[1].start]
        if strings:
            return "," + self.text[cell.start + 1 : strings[0].start]
        return "," + self.newline + self._indent_of(cell.start) + " "

    def _array(self, cell: CellSource, written: List[str], separator: str) -> str:
        if not written:
            return "[]"
        blank = separator[1:]
        if "\n" not in blank:
            return "[" + blank + separator.join(written) + "]"
        return "[" + blank + separator.join(written) + self.newline + self._indent_of(cell.start) + "]"

    def _indent_of(self, offset: int) -> str:
        line_start = self.text.rfind("\n", 0, offset) + 1
        line = self.text[line_start:offset]
        return line[: len(line) - len(line.lstrip(" \t"))]


def split_lines(text: str) -> List[str]:
    """The lines of a cell as nbformat stores them: each with its "\\n", the last without."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def apply_edits(text: str, edits: List[Edit]) -> str:
    pieces, position = [], 0
    for start, end, new in sorted(edits):
        pieces += [text[position:start], new]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


# -- the walk -----------------------------------------------------------------------------------


def _cells(text: str, position: int) -> List[CellSource]:
    members = _members(text, position)
    if "cells" not in members:
        raise ValueError("no 'cells' list")
    start, _ = members["cells"]
    cells = []
    for cell_start, _ in _elements(text, start):
        cell = _members(text, cell_start)
        if "cell_type" not in cell or "source" not in cell:
            raise ValueError(f"cell {len(cells) + 1} has no cell_type or source")
        cell_type = json.loads(text[slice(*cell["cell_type"])])
        cells.append(_source(text, str(cell_type), *cell["source"], number=len(cells) + 1))
    return cells


def _source(text: str, cell_type: str, start: int, end: int, number: int) -> CellSource:
    if text[start] == '"':
        return CellSource(cell_type, start, end, [_string(text, start)], is_list=False)
    if text[start] != "[":
        raise ValueError(f"cell {number}: its source is not text")
    strings = []
    for element_start, _ in _elements(text, start):
        if text[element_start] != '"':
            raise ValueError(f"cell {number}: its source is not a list of strings")
        strings.append(_string(text, element_start))
    return CellSource(cell_type, start, end, strings, is_list=True)


def _string(text: str, start: int) -> JsonString:
    value, end = scanstring(text, start + 1)
    return JsonString(start, end, value)


def _members(text: str, position: int) -> dict:
    """{key: (start, end) of its value} of the object at ``position`` (the last of equal keys
    wins, as in json.loads)."""
    if text[position] != "{":
        raise ValueError("an object was expected")
    members = {}
    position = _skip_blanks(text, position + 1)
    if text[position] == "}":
        return members
    while True:
        if text[position] != '"':
            raise ValueError("a key was expected")
        key, position = scanstring(text, position + 1)
        position = _skip_blanks(text, position)
        if text[position] != ":":
            raise ValueError("':' was expected")
        start = _skip_blanks(text, position + 1)
        _, end = _DECODER.raw_decode(text, start)
        members[key] = (start, end)
        position = _skip_blanks(text, end)
        if text[position] == "}":
            return members
        if text[position] != ",":
            raise ValueError("',' was expected")
        position = _skip_blanks(text, position + 1)


def _elements(text: str, position: int) -> List[Tuple[int, int]]:
    """(start, end) of each value of the array at ``position``."""
    if text[position] != "[":
        raise ValueError("a list was expected")
    spans = []
    position = _skip_blanks(text, position + 1)
    if text[position] == "]":
        return spans
    while True:
        _, end = _DECODER.raw_decode(text, position)
        spans.append((position, end))
        position = _skip_blanks(text, end)
        if text[position] == "]":
            return spans
        if text[position] != ",":
            raise ValueError("',' was expected")
        position = _skip_blanks(text, position + 1)


def _skip_blanks(text: str, position: int) -> int:
    return _BLANKS.match(text, position).end()
