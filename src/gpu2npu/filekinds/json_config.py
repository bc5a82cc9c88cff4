"""JSON configs (``*.json``): settings migrated in place (gpu2npu.filekinds._settings).

The standard parser gives no positions, so the file is read by a small scanner of its own that
accepts what ``json.loads`` accepts (strings are decoded by ``json.decoder.scanstring``) and
records where each value lies. It keeps its own stack, so deeply nested input is no problem.
Most JSON files are data (annotations, vocabularies): those without a trigger are not read.
A file with comments (JSONC) is not JSON: it is copied unchanged.
"""

from __future__ import annotations

import re
from json.decoder import scanstring
from typing import List, Optional, Tuple

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds._settings import (
    LIST,
    NULL,
    SCALAR,
    STRING,
    InvalidConfig,
    KeyName,
    Setting,
    TextLines,
    migrate_config,
)
from gpu2npu.filekinds.base import CharOffsets

WHITESPACE = re.compile(r"[ \t\n\r]*")
# A number as json.loads reads it, and the constants it accepts.
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
LITERALS = {
    "true": SCALAR,
    "false": SCALAR,
    "null": NULL,
    "NaN": SCALAR,
    "Infinity": SCALAR,
    "-Infinity": SCALAR,
}
LITERAL = re.compile(r"true|false|null|NaN|-?Infinity")


class JsonConfig(FileKind):
    name = "json"
    order = 30

    def claims(self, rel, head):
        return rel.lower().endswith(".json")

    def migrate(self, data, rel, context):
        return migrate_config(data, context, "JSON", read_settings)


class _Frame:
    """An open object or array: the key it is under, and for an object the member being read."""

    __slots__ = ("is_object", "owner", "owner_line", "key", "key_line", "items")

    def __init__(self, is_object: bool, owner: Optional[str], owner_line: int):
        self.is_object, self.owner, self.owner_line = is_object, owner, owner_line
        self.key, self.key_line, self.items = None, 0, 0


class _Scanner:
    def __init__(self, text: str):
        self.text = text
        self.offsets = CharOffsets(text)
        self.settings: List[Setting] = []
        self.keys: List[KeyName] = []
        self.stack: List[_Frame] = []
        self.lines = TextLines(text)

    def fail(self, position: int, problem: str):
        if self.text.startswith(("//", "/*", "#"), position):
            problem = "a comment: JSON has none"
        raise InvalidConfig(f"invalid JSON (line {self.lines.line_of(position)}: {problem})")

    def skip(self, position: int) -> int:
        return WHITESPACE.match(self.text, position).end()

    def byte_span(self, start: int, end: int) -> Tuple[int, int]:
        return self.offsets.byte_offset(start), self.offsets.byte_offset(end)

    def string(self, position: int) -> Tuple[str, int, Optional[Tuple[int, int]]]:
        """A string at ``position`` (its opening quote): its value, where it ends, and the byte
        span of its characters when written as they read (no escapes)."""
        try:
            value, end = scanstring(self.text, position + 1, True)
        except ValueError as exc:
            self.fail(getattr(exc, "pos", position), getattr(exc, "msg", str(exc)))
        written = self.text[position + 1 : end - 1] == value
        return value, end, self.byte_span(position + 1, end - 1) if written else None

    def scan(self) -> None:
        """Read the whole text (no recursion: containers are on ``stack``)."""
        text, stack = self.text, self.stack
        position = self.skip(1 if text.startswith("\ufeff") else 0)
        if position == len(text):
            self.fail(position, "no value (an empty file)")
        need_value = True
        while True:
            if need_value:
                position, opened = self.value(position)
                need_value = False
                if opened:
                    position, need_value = self.opened(position)
                continue
            position = self.skip(position)  # after a value: a comma, or the end of its container
            if not stack:
                if position != len(text):
                    self.fail(position, "extra data after the value")
                return
            top = stack[-1]
            char = text[position : position + 1]
            if char == ",":
                position = self.skip(position + 1)
                if top.is_object:
                    position = self.member_key(top, position)
                need_value = True
            elif char == ("}" if top.is_object else "]"):
                position = self.close(position + 1)
            else:
                self.fail(position, f"expecting ',' or '{'}' if top.is_object else ']'}'")

    def opened(self, position: int) -> Tuple[int, bool]:
        """After an opening bracket: close an empty container, or read the first key of an
        object. Where reading goes on, and whether a value comes next."""
        position = self.skip(position)
        top = self.stack[-1]
        if self.text.startswith("}" if top.is_object else "]", position):
            return self.close(position + 1), False
        return (self.member_key(top, position) if top.is_object else position), True

    def value(self, position: int) -> Tuple[int, bool]:
        """Read one value, or open an object or array: where it ends, and whether it opened one."""
        text, stack = self.text, self.stack
        top = stack[-1] if stack else None
        owner, owner_line, item = None, 0, False
        if top is not None:
            top.items += 1
            if top.is_object:
                owner, owner_line = top.key, top.key_line
            else:
                owner, owner_line, item = top.owner, top.owner_line, True
        char = text[position : position + 1]
        if char in ("{", "["):
            stack.append(_Frame(char == "{", None if item else owner, owner_line))
            return position + 1, True
        if char == '"':
            value, end, span = self.string(position)
            kind = STRING
        else:
            found = NUMBER.match(text, position) or LITERAL.match(text, position)
            if found is None:
                self.fail(position, "expecting a value")
            value, end, span = found.group(), found.end(), None
            kind = LITERALS.get(value, SCALAR)
        if owner is not None:
            line = self.lines.line_of(position) if item else owner_line
            self.settings.append(
                Setting(owner, value, kind, line, self.lines.line_of(end - 1), span, item=item)
            )
        return end, False

    def member_key(self, frame: _Frame, position: int) -> int:
        """Read ``"key":`` of an object's member; the position of its value."""
        if not self.text.startswith('"', position):
            self.fail(position, "expecting a property name in double quotes")
        key, end, span = self.string(position)
        frame.key, frame.key_line = key, self.lines.line_of(position)
        if span is not None:
            self.keys.append(KeyName(key, span))
        position = self.skip(end)
        if not self.text.startswith(":", position):
            self.fail(position, "expecting ':'")
        return self.skip(position + 1)

    def close(self, end: int) -> int:
        """Close the innermost container (``end``: after its bracket); a non-empty one under a
        key is a setting, for the rules that report keys."""
        frame = self.stack.pop()
        if frame.owner is not None and frame.items:
            self.settings.append(
                Setting(frame.owner, "", LIST, frame.owner_line, self.lines.line_of(end - 1))
            )
        return end


def read_settings(text: str) -> Tuple[List[Setting], List[KeyName]]:
    """Every value under a key (strings, other scalars, non-empty containers) and every key."""
    scanner = _Scanner(text)
    scanner.scan()
    return scanner.settings, scanner.keys
