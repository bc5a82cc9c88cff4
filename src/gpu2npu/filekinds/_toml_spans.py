"""Where the values of a TOML document are, for edits by span (the packaging and toml kinds):
``toml_values`` walks the text of a document tomlkit has already accepted and records, for every
value, its key path and its character span (tomlkit keeps the layout but not positions). Arrays
and inline tables are walked into: an array item's path ends with its index, an array of tables
(``[[tool.poetry.source]]``) counts its tables the same way. Only strings are decoded.

Every value read is checked against tomlkit's data at its path, so a construct the scanner read
otherwise than tomlkit makes the whole document unlocated (None), never a wrong span. One pass
over the text locates every value: putting a marker in the document and writing it out again
would cost a whole dump per value, and depends on tomlkit writing the text back unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
SCALAR = re.compile(r"[^,\]}#\r\n]*")  # a number, boolean or date: up to what ends a value
LINE_BREAK = re.compile(r"[ \t]*\r?\n[ \t\r\n]*")
ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}
Path = Tuple[object, ...]


class ScanError(ValueError):
    pass


@dataclass
class Value:
    """One value of the document: where it is and, for a string, what it reads."""

    path: Path
    start: int  # character offsets of the value in the text
    end: int
    kind: str  # "string", "array", "table" (inline), "other"
    text: str = ""  # a string's value
    quote: str = ""  # a string's delimiter: ", ', \"\"\" or '''
    pair_start: int = -1  # where its ``key = value`` line starts (a value of a table's key)
    size: int = 0  # an array's items, an inline table's keys
    content: Tuple[int, int] = (0, 0)  # a string's characters: inside its quotes, after a dropped line break


class _Scanner:
    """One pass over the text: key/value pairs, table headers, and the values inside arrays and
    inline tables."""

    def __init__(self, text: str):
        self.text = text
        self.position = 0
        self.values: Dict[Path, Value] = {}
        self.table: Path = ()
        self.table_arrays: Dict[Tuple[str, ...], int] = {}  # [[name]] -> index of its last table

    def scan(self) -> Dict[Path, Value]:
        text = self.text
        while True:
            self.skip(newlines=True)
            if self.position >= len(text):
                return self.values
            if text[self.position] == "[":
                self.header()
            else:
                pair_start = self.position
                path = self.table + self.key()
                self.expect("=")
                self.value(path, pair_start)
            self.skip()
            if self.position < len(text) and text[self.position] not in "\r\n":
                raise ScanError(f"unexpected text at {self.position}")

    def header(self) -> None:
        array = self.text.startswith("[[", self.position)
        self.position += 2 if array else 1
        keys = self.key()
        self.expect("]]" if array else "]")
        if array:
            self.table_arrays[keys] = self.table_arrays.get(keys, -1) + 1
            for inner in [known for known in self.table_arrays if known[: len(keys)] == keys != known]:
                del self.table_arrays[inner]  # a new table of [[a]]: its [[a.b]] are counted again
        self.table = self.resolve(keys)

    def resolve(self, keys: Tuple[str, ...]) -> Path:
        """A table's path, with the index of the current table of each array of tables on it."""
        path: List[object] = []
        for end in range(1, len(keys) + 1):
            path.append(keys[end - 1])
            if keys[:end] in self.table_arrays:
                path.append(self.table_arrays[keys[:end]])
        return tuple(path)

    def key(self) -> Tuple[str, ...]:
        parts = []
        while True:
            self.skip()
            char = self.text[self.position : self.position + 1]
            if char in ('"', "'"):
                parts.append(self.string().text)
            else:
                match = BARE_KEY.match(self.text, self.position)
                if not match:
                    raise ScanError(f"no key at {self.position}")
                parts.append(match.group())
                self.position = match.end()
            self.skip()
            if self.text.startswith(".", self.position):
                self.position += 1
                continue
            return tuple(parts)

    def value(self, path: Path, pair_start: int = -1) -> Value:
        self.skip()
        text, start = self.text, self.position
        char = text[start : start + 1]
        if char in ('"', "'"):
            value = self.string()
        elif char == "[":
            value = self.array(path)
        elif char == "{":
            value = self.inline_table(path)
        else:
            match = SCALAR.match(text, start)
            self.position = start + len(match.group().rstrip())
            if self.position == start:
                raise ScanError(f"no value at {start}")
            value = Value(path, start, self.position, "other")
        value.path, value.pair_start = path, pair_start
        self.values[path] = value
        return value

    def array(self, path: Path) -> Value:
        start, number = self.position, 0
        self.position += 1
        while not self.closes("]"):
            self.value(path + (number,))
            number += 1
            if not self.separates("]"):
                break
        self.expect("]", newlines=True)
        return Value(path, start, self.position, "array", size=number)

    def inline_table(self, path: Path) -> Value:
        start, size = self.position, 0
        self.position += 1
        while not self.closes("}"):
            keys = self.key()
            self.expect("=")
            self.value(path + keys)
            size += 1
            if not self.separates("}"):
                break
        self.expect("}", newlines=True)
        return Value(path, start, self.position, "table", size=size)

    def closes(self, bracket: str) -> bool:
        self.skip(newlines=True)
        return self.text.startswith(bracket, self.position)

    def separates(self, bracket: str) -> bool:
        """After an item: a comma (another item may follow), else the closing bracket must."""
        self.skip(newlines=True)
        if self.text.startswith(",", self.position):
            self.position += 1
            return True
        return False

    def string(self) -> Value:
        text, start = self.text, self.position
        for quote in ('"""', "'''", '"', "'"):
            if text.startswith(quote, start):
                break
        body = start + len(quote)
        literal = quote[0] == "'"
        position = body
        while True:
            found = text.find(quote, position)
            if found == -1:
                raise ScanError(f"unterminated string at {start}")
            if literal or not _escaped(text, body, found):
                break
            position = found + 1
        end = found + len(quote)
        if len(quote) == 3:  # a multi-line string may end with up to two more quote characters
            while text.startswith(quote[0], end) and end - found < 5:
                end += 1
            found = end - 3
        self.position = end
        written = text[body:found]
        value = written if literal else _unescape(written)
        if len(quote) == 3:  # a multi-line string drops the line break right after its quotes
            dropped = next((n for n in ("\r\n", "\n") if written.startswith(n)), "")
            body += len(dropped)
            value = value[len(dropped) :]
        return Value((), start, end, "string", value, quote, content=(body, found))

    def skip(self, newlines: bool = False) -> None:
        """Spaces, tabs and a comment (with ``newlines``: line breaks and comment lines too)."""
        text = self.text
        while self.position < len(text):
            char = text[self.position]
            if char in " \t" or newlines and char in "\r\n":
                self.position += 1
            elif char == "#":
                newline = text.find("\n", self.position)
                self.position = len(text) if newline == -1 else newline
                if not newlines:
                    return
            else:
                return

    def expect(self, token: str, newlines: bool = False) -> None:
        self.skip(newlines)
        if not self.text.startswith(token, self.position):
            raise ScanError(f"expected {token!r} at {self.position}")
        self.position += len(token)


def _escaped(text: str, body: int, position: int) -> bool:
    """Whether the quote at ``position`` is escaped (an odd run of backslashes before it)."""
    count = 0
    while position - count - 1 >= body and text[position - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _unescape(raw: str) -> str:
    out, position = [], 0
    while True:
        slash = raw.find("\\", position)
        if slash == -1:
            out.append(raw[position:])
            return "".join(out)
        out.append(raw[position:slash])
        code = raw[slash + 1 : slash + 2]
        if code in ESCAPES:
            out.append(ESCAPES[code])
            position = slash + 2
        elif code in ("u", "U", "x"):
            digits = {"u": 4, "U": 8, "x": 2}[code]
            out.append(chr(int(raw[slash + 2 : slash + 2 + digits], 16)))
            position = slash + 2 + digits
        else:  # a line-ending backslash: the break and the whitespace after it go
            match = LINE_BREAK.match(raw, slash + 1)
            if not match:
                raise ScanError("bad escape")
            position = match.end()


def toml_values(text: str, data) -> Optional[Dict[Path, Value]]:
    """The values of a TOML document by key path, with their spans in ``text``; ``data``: what
    tomlkit read from it (``tomlkit.parse(text).unwrap()``). None when the scanner cannot follow
    the text or reads any value otherwise than tomlkit."""
    try:
        values = _Scanner(text).scan()
    except (ScanError, ValueError, IndexError, RecursionError):
        return None
    return values if all(_agrees(value, data) for value in values.values()) else None


def _agrees(value: Value, data) -> bool:
    """Whether tomlkit has the same value at the value's path."""
    for key in value.path:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return False
    if value.kind == "string":
        return isinstance(data, str) and data == value.text
    if value.kind == "array":
        return isinstance(data, list) and len(data) == value.size
    if value.kind == "table":
        return isinstance(data, dict) and bool(data) == bool(value.size)  # (dotted keys share an entry)
    return not isinstance(data, (str, list, dict))
