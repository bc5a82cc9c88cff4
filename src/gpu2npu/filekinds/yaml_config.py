"""YAML configs (``*.yaml``, ``*.yml``): settings migrated in place (gpu2npu.filekinds._settings).

The file is read as a YAML event stream, which gives every scalar with its style and position
and never builds the document: an alias is never expanded (a bomb of nested aliases costs what
it is long) and no recursion follows the nesting. Keys at any depth, flow mappings, lists of
mappings, several documents and anchors are all seen; a value is edited only where its
characters are written as they read (plain, single- or double-quoted without escapes), so
quoting, comments and layout stay.

The events come from libyaml (PyYAML's C parser) where it is installed, else from ruamel.yaml's
parser (pure Python, twenty times slower). Both take time growing with the nesting depth for
every token, so nesting deeper than ``MAX_DEPTH`` is refused, and a file with many flow
collections (which libyaml would scan far ahead before the first refusal) is read by ruamel's,
whose scanner refuses the depth as it goes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator, List, Optional, Tuple

import yaml as pyyaml

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
from gpu2npu.rules.loader import LIBYAML_TOO_DEEP

MAX_DEPTH = 200
# More '[' and '{' than this: ruamel's scanner, which stops at MAX_DEPTH as it reads.
MAX_FLOW_OPENERS_FOR_LIBYAML = 10000
LIBYAML = bool(getattr(pyyaml, "__with_libyaml__", False))
STR_TAGS = (None, "tag:yaml.org,2002:str", "!!str")
# Plain scalars that YAML reads as null, a boolean or a number (not strings).
PLAIN_NULL = re.compile(r"~|null|Null|NULL|")
PLAIN_OTHER = re.compile(
    r"true|True|TRUE|false|False|FALSE|[-+]?[0-9][0-9_]*|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)
BOM_BYTES = 3
QUOTES = (None, "'", '"')  # the styles whose characters can be edited in place
VALUE_EVENTS = ("ScalarEvent", "AliasEvent", "MappingStartEvent", "SequenceStartEvent")
END_EVENTS = ("MappingEndEvent", "SequenceEndEvent")
HYDRA_TARGET = "_target_"  # the class Hydra's instantiate() builds from a mapping


class YamlConfig(FileKind):
    name = "yaml"
    order = 30

    def claims(self, rel, head):
        return rel.lower().endswith((".yaml", ".yml"))

    def migrate(self, data, rel, context):
        return migrate_config(data, context, "YAML", read_settings)


def _errors() -> tuple:
    """What the parsers raise on a document they refuse."""
    from ruamel.yaml.error import YAMLError  # ruamel is imported only when it is needed

    return (YAMLError, pyyaml.YAMLError, RecursionError, ValueError, MemoryError)


@lru_cache(maxsize=1)
def _bounded_scanner() -> type:
    """ruamel's scanner, refusing flow collections nested too deeply as it meets them."""
    from ruamel.yaml.scanner import Scanner, ScannerError

    class BoundedScanner(Scanner):
        def fetch_flow_collection_start(self, *args, **kwargs):
            if self.flow_level >= MAX_DEPTH:
                raise ScannerError(None, None, _too_deep(), self.reader.get_mark())
            super().fetch_flow_collection_start(*args, **kwargs)

    return BoundedScanner


def events(text: str, libyaml: Optional[bool] = None) -> Iterator:
    """The YAML events of ``text`` (``libyaml``: None chooses)."""
    if libyaml is None:
        libyaml = LIBYAML and text.count("[") + text.count("{") <= MAX_FLOW_OPENERS_FOR_LIBYAML
    if libyaml:
        return pyyaml.parse(text, Loader=pyyaml.CSafeLoader)
    from ruamel.yaml import YAML

    parser = YAML(typ="safe", pure=True)
    parser.Scanner = _bounded_scanner()
    return parser.parse(text)


class _Frame:
    """An open mapping or sequence: whose key it is under, and for a mapping the key being read."""

    __slots__ = ("is_map", "flow", "owner", "owner_line", "expect_key", "key", "key_line", "items", "own")

    def __init__(self, event, owner: Optional[str], owner_line: int):
        self.is_map, self.flow = type(event).__name__ == "MappingStartEvent", bool(event.flow_style)
        self.owner, self.owner_line = owner, owner_line
        self.expect_key, self.key, self.key_line, self.items = True, None, 0, 0
        self.own: List[Setting] = []  # a mapping's scalar values, to learn what builds it (_target_)


def read_settings(text: str, libyaml: Optional[bool] = None) -> Tuple[List[Setting], List[KeyName]]:
    """Every scalar value under a key (and every list or mapping, for reports), and the keys."""
    if text.startswith("\ufeff"):  # a byte order mark: the parsers differ on counting it
        settings, keys = read_settings(text[1:], libyaml)
        return [_shifted(setting, BOM_BYTES) for setting in settings], [
            KeyName(key.name, (key.span[0] + BOM_BYTES, key.span[1] + BOM_BYTES)) for key in keys
        ]
    reader = _Reader(text)
    try:
        reader.read(events(text, libyaml))
    except _errors() as exc:  # evaluated only when something is raised
        raise InvalidConfig(f"invalid YAML ({_problem(exc, reader.lines)})") from None
    return reader.settings, reader.keys


class _Reader:
    """Settings from the events: a stack of the open collections says what each value is under.
    Lines are counted at '\\n' like every other line number of a migration."""

    def __init__(self, text: str):
        self.text = text
        self.offsets = CharOffsets(text)
        self.lines = TextLines(text)
        self.settings: List[Setting] = []
        self.keys: List[KeyName] = []
        self.stack: List[_Frame] = []
        self.last_end = 0  # where the last value written ends (a block collection's end event is not there)

    def read(self, stream) -> None:
        stack = self.stack
        anchors = set()  # of the document: an alias of none is an error to every YAML loader
        for event in stream:
            name = type(event).__name__
            if name == "DocumentStartEvent":
                anchors.clear()
            elif getattr(event, "anchor", None) is not None:
                if name == "AliasEvent" and event.anchor not in anchors:
                    line = self.lines.line_of(event.start_mark.index)
                    raise InvalidConfig(f"invalid YAML (line {line}: found undefined alias {event.anchor!r})")
                anchors.add(event.anchor)
            if name in END_EVENTS:
                frame = stack.pop()
                if frame.flow:
                    self.last_end = event.end_mark.index
                self.close(frame)
                continue
            if name not in VALUE_EVENTS:
                continue
            if name in ("ScalarEvent", "AliasEvent"):
                self.last_end = event.end_mark.index
            top = stack[-1] if stack else None
            if top is not None:
                top.items += 1
            owner, owner_line, item = None, 0, False
            if top is not None and top.is_map and top.expect_key:
                top.expect_key = False
                self.read_key(top, event, name)
            elif top is not None and top.is_map:
                top.expect_key = True
                owner, owner_line = top.key, top.key_line
            elif top is not None:
                owner, owner_line, item = top.owner, top.owner_line, True
            if name == "ScalarEvent" and owner is not None:
                self.settings.append(self.scalar(event, owner, owner_line, item))
                if not item:
                    top.own.append(self.settings[-1])
            elif name.endswith("StartEvent"):  # the items of a list under a key are under it
                stack.append(_Frame(event, owner if not item else None, owner_line))
                if len(stack) > MAX_DEPTH:
                    line = self.lines.line_of(event.start_mark.index)
                    raise InvalidConfig(f"invalid YAML (line {line}: {_too_deep()})")

    def read_key(self, frame: _Frame, event, name: str) -> None:
        if name != "ScalarEvent" or (event.style or None) not in QUOTES:
            frame.key, frame.key_line = None, 0  # a complex key, an alias or a block scalar: not compared
            return
        frame.key, frame.key_line = event.value, self.lines.line_of(event.start_mark.index)
        span = _inner_span(event, self.text)
        if span is not None:
            self.keys.append(KeyName(event.value, self.byte_span(span)))

    def scalar(self, event, key: str, key_line: int, item: bool) -> Setting:
        value, style = event.value, event.style or None
        if style is None and event.tag in (None, "!"):
            kind = NULL if PLAIN_NULL.fullmatch(value) else SCALAR if PLAIN_OTHER.fullmatch(value) else STRING
        else:
            kind = STRING if event.tag in STR_TAGS or event.tag == "!" else SCALAR
        span = _inner_span(event, self.text) if kind == STRING else None
        line = self.lines.line_of(event.start_mark.index) if item else key_line
        end_line = self.line_before(event.end_mark.index)
        return Setting(
            key, value, kind, line, max(line, end_line), self.byte_span(span) if span else None, item=item
        )

    def close(self, frame: _Frame) -> None:
        """A list or mapping under a key (non-empty): one setting, for the rules that report keys.
        The settings of a mapping Hydra builds learn the class (``_target_``)."""
        built_by = next((s.text for s in frame.own if s.key == HYDRA_TARGET and s.kind == STRING), "")
        for setting in frame.own if built_by else ():
            setting.built_by = built_by
        if frame.owner is not None and frame.items:
            end_line = max(frame.owner_line, self.line_before(self.last_end))
            self.settings.append(Setting(frame.owner, "", LIST, frame.owner_line, end_line))

    def line_before(self, end: int) -> int:
        """The line of the last character before ``end`` (where what ends there ends)."""
        return self.lines.line_of(max(0, end - 1))

    def byte_span(self, span: Tuple[int, int]) -> Tuple[int, int]:
        return self.offsets.byte_offset(span[0]), self.offsets.byte_offset(span[1])


def _shifted(setting: Setting, by: int) -> Setting:
    if setting.span is not None:
        setting.span = (setting.span[0] + by, setting.span[1] + by)
    return setting


def _inner_span(event, text: str) -> Optional[Tuple[int, int]]:
    """The characters of a scalar's value when written as they read (a span of ``text``), else
    None: an escape, a folded line, a block scalar."""
    style = event.style or None
    if style not in QUOTES:
        return None
    quote = style or ""
    token = quote + event.value + quote
    start, end = event.start_mark.index, event.end_mark.index
    if "\n" in token or "\r" in token or not text.endswith(token, start, end):
        return None
    begin = end - len(token)
    if begin > start and text[begin - 1] not in " \t":  # after an anchor or a tag, a space
        return None
    return begin + len(quote), end - len(quote)


def _too_deep() -> str:
    return f"nested more than {MAX_DEPTH} levels deep"


def _problem(exc: BaseException, lines: TextLines) -> str:
    """``line N: what`` for a parser's error, on one line (the two parsers word some alike)."""
    if hasattr(exc, "character") and hasattr(exc, "position"):  # a character YAML does not allow
        character = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
        return f"line {lines.line_of(exc.position)}: unacceptable character #x{character:04x}"
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if problem is None:
        problem = str(exc) or type(exc).__name__
    problem = " ".join(str(problem).split())
    if LIBYAML_TOO_DEEP in problem:  # PyYAML 6.0.4+ refuses deep nesting itself: say it as ruamel's path does
        problem = _too_deep()
    return f"line {lines.line_of(mark.index)}: {problem}" if mark is not None else problem
