"""Packaging metadata: ``pyproject.toml`` and ``setup.cfg`` (and, for the Python engine, the
requirements of a ``setup.py``: ``setup_py_dependencies``).

pyproject.toml is checked with tomlkit and its values located by ``_toml_spans.toml_values``; the
requirements are those of ``[project] dependencies``, ``[project.optional-dependencies]``,
``[dependency-groups]`` and poetry's ``[tool.poetry.dependencies]`` (and its groups). setup.cfg is
read line by line (configparser checks it): ``[options] install_requires`` and
``[options.extras_require]``. As in a requirements file, torch is pinned to the target version and
torch_npu added next to it (same quoting and indentation), the rest is reported and planned;
package sources that serve CUDA builds (poetry, uv and pdm sources) are reported. A pyproject.toml
without dependency tables is left alone and plans nothing.
"""

from __future__ import annotations

import ast
import configparser
import posixpath
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds._dependencies import (
    MIB,
    RequirementText,
    Written,
    normalise,
    pinned_requirement,
    plan_dependencies,
    read_requirement,
    source_report,
    why_unread,
)
from gpu2npu.filekinds._toml_spans import Value, toml_values
from gpu2npu.filekinds.base import (
    CharOffsets,
    KindContext,
    KindOutcome,
    LineIndex,
    PlannedDependency,
    Reported,
    SpanEdits,
    decode,
)

MAX_BYTES = MIB  # packaging metadata is a few KiB; tomlkit reads about 1 MiB a second
SETUP_PY = (
    "setup.py is left as it is: require torch_npu=={torch_npu} next to torch in install_requires "
    "(and torch=={torch} where it is installed for the NPU)"
)
POETRY_TABLE = (
    "poetry requires torch in a form not edited here: require torch=={torch} and torch_npu=={torch_npu}"
)
# Where the URLs of package sources are: (path prefix, index of the URL's key or None for an array item)
SOURCE_URLS = (
    ("tool", "poetry", "source"),
    ("tool", "uv", "index"),
    ("tool", "pdm", "source"),
)
UV_INDEX_OPTIONS = ("index-url", "extra-index-url", "find-links")


class PackagingFile(FileKind):
    name = "packaging"
    order = 10

    def claims(self, rel, head):
        return posixpath.basename(rel) in ("pyproject.toml", "setup.cfg")

    def migrate(self, data: bytes, rel: str, context: KindContext) -> KindOutcome:
        problem = why_unread(data, MAX_BYTES, "a packaging metadata file")
        if problem:
            return KindOutcome(skipped=problem)
        if posixpath.basename(rel) == "setup.cfg":
            return _SetupCfg(data, context.index).migrate()
        return _Pyproject(data, context.index).migrate()


# -- shared: applying the plan ---------------------------------------------------------------------


class _File:
    """A dependency file as text and bytes: its items, the edits the plan makes."""

    def __init__(self, data: bytes, index):
        self.data, self.index = data, index
        self.text = decode(data)
        self.offsets = CharOffsets(self.text)
        self.lines = LineIndex(data)
        self.items: List[Written] = []
        self.reported: List[Reported] = []

    def line_of(self, char: int) -> int:
        return self.lines.line_of(self.offsets.byte_offset(char))

    def apply(self, manual: str = "") -> KindOutcome:
        plan = plan_dependencies(self.items, self.index, *([manual] if manual else []))
        edits = SpanEdits(self.data)
        for pin in plan.pins:
            start, end, new = self.pin_edit(self.items[pin.item], pin.version)
            self.edit(edits, start, end, new, pin.message, pin.rule)
        for addition in plan.additions:
            offset, new = self.addition(self.items[addition.item], addition.requirement, addition.version)
            self.edit(edits, offset, offset, new, addition.message, addition.rule)
        outcome = edits.outcome()
        outcome.reported = sorted(self.reported + plan.reported)
        outcome.dependencies = plan.dependencies
        return outcome

    def edit(self, edits: SpanEdits, start: int, end: int, new: str, message: str, rule: str) -> None:
        span = self.offsets.byte_offset(start), self.offsets.byte_offset(end)
        new_bytes = new.encode("utf-8", "surrogateescape")
        if start == end:
            edits.insert(span[0], new_bytes, message, rule)
        else:
            edits.replace(*span, new_bytes, message, rule)

    def pin_edit(self, item: Written, version: str) -> Tuple[int, int, str]:
        """A PEP 508 string at character ``item.where[0]``: its specifier replaced."""
        start, end, new = pinned_requirement(item.requirement, version)
        return item.where[0] + start, item.where[0] + end, new

    def addition(self, item: Written, requirement: str, version: str) -> Tuple[int, str]:
        raise NotImplementedError

    def line_bounds(self, char: int) -> Tuple[int, int, str]:
        """(start of the line holding ``char``, start of the next line, its line ending)."""
        start = self.text.rfind("\n", 0, char) + 1
        newline = self.text.find("\n", char)
        if newline == -1:
            return start, len(self.text), ""
        ending = "\r\n" if newline > 0 and self.text[newline - 1] == "\r" else "\n"
        return start, newline + 1, ending

    def eol(self) -> str:
        newline = self.text.find("\n")
        return "\r\n" if newline > 0 and self.text[newline - 1] == "\r" else "\n"


# -- pyproject.toml ---------------------------------------------------------------------------------


class _Pyproject(_File):
    def migrate(self) -> KindOutcome:
        import tomlkit  # only for files of this kind

        try:
            document = tomlkit.parse(self.text).unwrap()
        except Exception as exc:  # tomlkit's ParseError, and RecursionError on deep nesting
            return KindOutcome(skipped=f"invalid TOML ({_first_line(exc)}); copied unchanged")
        values = toml_values(self.text, document)
        if values is None:
            return KindOutcome(skipped="TOML laid out in a way gpu2npu cannot follow; copied unchanged")
        for value in sorted(values.values(), key=lambda v: v.start):
            self.read(value, values)
        if not self.items and not self.reported:
            return KindOutcome()
        return self.apply(POETRY_TABLE)

    def read(self, value: Value, values: Dict) -> None:
        path = value.path
        if value.kind == "string" and _pep508_place(path):
            requirement = read_requirement(value.text)
            if requirement is not None:
                editable = len(value.quote) == 1 and _written_as_read(self.text, value)
                lines = self.line_of(value.start), self.line_of(value.end - 1)
                where = (value.content[0], value)
                self.items.append(Written(requirement, *lines, editable, where, group=path[:-1]))
        elif _poetry_place(path) and path[-1] != "python":
            self.poetry(value, values)
        elif value.kind == "string" and _source_place(path):
            found = source_report(self.index, "index", value.text, self.line_of(value.start))
            if found is not None:
                self.reported.append(found)

    def poetry(self, value: Value, values: Dict) -> None:
        """A poetry dependency: ``torch = "^2.1"`` or ``torch = {version = "^2.1", source = "x"}``."""
        name = str(value.path[-1])
        version = value if value.kind == "string" else values.get(value.path + ("version",))
        constraint = version.text if version is not None and version.kind == "string" else ""
        spec = poetry_specifier(constraint) if constraint else ""
        shown = f'{name} = "{constraint}"' if constraint else f"{name} = {self.text[value.start : value.end]}"
        direct = value.kind == "table" and any(
            values.get(value.path + (key,)) for key in ("git", "path", "url")
        )
        url = "(a git, path or URL source)" if direct else ""
        requirement = RequirementText(shown, name, normalise(name), 0, len(name), spec or "", url=url)
        editable = (
            version is not None
            and version.kind == "string"
            and spec is not None
            and len(version.quote) == 1
            and _written_as_read(self.text, version)
        )
        line = self.line_of(value.pair_start if value.pair_start >= 0 else value.start)
        self.items.append(
            Written(
                requirement,
                line,
                self.line_of(value.end - 1),
                editable,
                ("poetry", value, version),
                group=value.path[:-1],
            )
        )

    def pin_edit(self, item: Written, version: str) -> Tuple[int, int, str]:
        if item.where[0] == "poetry":
            return (*item.where[2].content, version)
        return super().pin_edit(item, version)

    def addition(self, item: Written, requirement: str, version: str) -> Tuple[int, str]:
        if item.where[0] == "poetry":
            pair = item.where[1]
            start, next_line, ending = self.line_bounds(pair.end)
            indent = self.text[self.text.rfind("\n", 0, pair.pair_start) + 1 : pair.pair_start]
            if ending:
                return next_line, f'{indent}torch_npu = "{version}"{ending}'
            return next_line, f'{self.eol()}{indent}torch_npu = "{version}"'
        string = item.where[1]
        quote = string.quote[0]
        new = f"{quote}{requirement}{quote}"
        line_start, next_line, ending = self.line_bounds(string.start)
        after = _skip_blanks(self.text, string.end)
        own_line = not self.text[line_start : string.start].strip()
        if own_line and ending and self.text.startswith(",", after):
            rest = _skip_blanks(self.text, after + 1)
            if rest >= len(self.text) or self.text[rest] in "#\r\n":
                return next_line, f"{self.text[line_start : string.start]}{new},{ending}"
        return string.end, f", {new}"


def _pep508_place(path: Tuple) -> bool:
    """An item of a list of PEP 508 requirements: [project] dependencies, optional-dependencies,
    dependency-groups."""
    if not path or not isinstance(path[-1], int):
        return False
    if path[:2] == ("project", "dependencies") and len(path) == 3:
        return True
    if path[:2] == ("project", "optional-dependencies") and len(path) == 4:
        return True
    return path[0] == "dependency-groups" and len(path) == 3


def _poetry_place(path: Tuple) -> bool:
    if path[:3] in (("tool", "poetry", "dependencies"), ("tool", "poetry", "dev-dependencies")):
        return len(path) == 4
    return len(path) == 6 and path[:3] == ("tool", "poetry", "group") and path[4] == "dependencies"


def _source_place(path: Tuple) -> bool:
    """The URL of a poetry, uv or pdm package source, or one of uv's index options."""
    if len(path) == 5 and path[:3] in SOURCE_URLS and path[4] == "url":
        return True
    return path[:2] == ("tool", "uv") and len(path) in (3, 4) and path[2] in UV_INDEX_OPTIONS


def _written_as_read(text: str, string: Value) -> bool:
    """Whether a string's characters are its value (no escapes): it can be edited in place."""
    start, end = string.content
    return text[start:end] == string.text


def _skip_blanks(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t":
        position += 1
    return position


def poetry_specifier(constraint: str) -> Optional[str]:
    """A poetry version constraint as a PEP 440 specifier: ^2.1 -> >=2.1,<3.0, ~2.1.0 ->
    >=2.1.0,<2.2.0, 2.1.0 -> ==2.1.0, * -> ''; None for what it cannot say (``a || b``)."""
    if "||" in constraint or "|" in constraint:
        return None
    parts = [part for part in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", constraint.strip()) if part]
    specs = []
    for part in parts:
        if part == "*":
            continue
        if part[0] in "^~" and not part.startswith("~="):
            release = _numbers(part[1:])
            if not release:
                return None
            upper = _caret_upper(release) if part[0] == "^" else _tilde_upper(release)
            specs += [f">={part[1:].strip()}", f"<{upper}"]
        elif part[0].isdigit():
            specs.append(f"=={part}")
        else:
            specs.append(part)
    return ",".join(specs)


def _numbers(text: str) -> List[int]:
    match = re.match(r"\s*([0-9]+(?:\.[0-9]+)*)", text)
    return [int(part) for part in match.group(1).split(".")] if match else []


def _caret_upper(release: List[int]) -> str:
    """^1.2.3 -> 2.0.0, ^0.2.3 -> 0.3.0, ^0.0.3 -> 0.0.4: the first non-zero part goes up."""
    for position, number in enumerate(release):
        if number != 0 or position == len(release) - 1:
            return ".".join(str(n) for n in release[:position] + [number + 1])
    return "1"


def _tilde_upper(release: List[int]) -> str:
    """~1.2.3 -> 1.3, ~1.2 -> 1.3, ~1 -> 2."""
    if len(release) == 1:
        return str(release[0] + 1)
    return f"{release[0]}.{release[1] + 1}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- setup.cfg ---------------------------------------------------------------------------------------


@dataclass
class _CfgValue:
    """One line of a requirement list in setup.cfg: its text and where it starts."""

    text: str
    start: int  # character offset of ``text``
    line: int  # 0-based line number
    first: bool  # on the ``key =`` line itself


class _SetupCfg(_File):
    def migrate(self) -> KindOutcome:
        try:
            configparser.RawConfigParser().read_string(self.text)
        except (configparser.Error, UnicodeError) as exc:
            return KindOutcome(skipped=f"invalid setup.cfg ({_first_line(exc)}); copied unchanged")
        self.line_texts = re.findall(r"[^\n]*\n|[^\n]+$", self.text)  # as configparser reads them
        self.line_starts = [0]
        for line in self.line_texts:
            self.line_starts.append(self.line_starts[-1] + len(line))
        for values in self.requirement_lists():
            self.read(values)
        if not self.items:
            return KindOutcome()
        return self.apply()

    def requirement_lists(self) -> List[List[_CfgValue]]:
        """The value lines of ``[options] install_requires`` and each ``[options.extras_require]``
        key, in order."""
        lists: List[List[_CfgValue]] = []
        section, current = "", None
        for number, raw in enumerate(self.line_texts):
            body = raw.rstrip("\r\n")
            stripped = body.strip()
            if not stripped or stripped[0] in "#;":
                continue
            start = self.line_starts[number]
            if body[0] in " \t":
                if current is not None:
                    current.append(_CfgValue(stripped, start + body.index(stripped[0]), number, False))
                continue
            current = None
            header = re.match(r"\[([^\]]+)\]", stripped)
            if header:
                section = header.group(1).strip().lower()
                continue
            option = re.match(r"([^=:\s][^=:]*?)\s*[=:]\s*(.*)$", body)
            if option and _wanted(section, option.group(1)):
                current = []
                lists.append(current)
                if option.group(2).strip():
                    current.append(_CfgValue(option.group(2).rstrip(), start + option.start(2), number, True))
        return lists

    def read(self, values: List[_CfgValue]) -> None:
        single = len(values) == 1 and values[0].first
        for value in values:
            text = _drop_comment(value.text)
            pieces = _semicolon_pieces(text) if single else [(text, 0)]
            for piece, offset in pieces:
                requirement = read_requirement(piece)
                if requirement is not None:
                    line = value.line + 1
                    where = (value.start + offset, value, single, values)
                    self.items.append(Written(requirement, line, line, True, where, group=id(values)))

    def addition(self, item: Written, requirement: str, version: str) -> Tuple[int, str]:
        start, value, single, values = item.where
        if single:
            return start + len(item.requirement.text.rstrip()), f"; {requirement}"
        line_start, next_line, ending = self.line_bounds(value.start)
        if value.first:
            following = [v for v in values if not v.first]
            indent = self.line_texts[following[0].line][
                : following[0].start - self.line_starts[following[0].line]
            ]
        else:
            indent = self.text[line_start : value.start]
        if ending:
            return next_line, f"{indent}{requirement}{ending}"
        return next_line, f"{self.eol()}{indent}{requirement}"


def _wanted(section: str, key: str) -> bool:
    key = key.strip().lower()
    return section == "options" and key == "install_requires" or section == "options.extras_require"


def _drop_comment(text: str) -> str:
    """A value line without a trailing ' #' comment (as setuptools reads requirement lines)."""
    match = re.search(r"\s#", text)
    return (text[: match.start()] if match else text).rstrip()


def _semicolon_pieces(text: str) -> List[Tuple[str, int]]:
    """The requirements of a one-line value separated by ';' (setuptools' list-semi), with offsets."""
    pieces, offset = [], 0
    for piece in text.split(";"):
        lead = len(piece) - len(piece.lstrip())
        pieces.append((piece.strip(), offset + lead))
        offset += len(piece) + 1
    return pieces


# -- setup.py (for the Python engine: read, never edited) ------------------------------------------


def setup_py_dependencies(data: bytes, index, tree=None) -> Tuple[List[PlannedDependency], List[Reported]]:
    """The dependency plan rows and reported items of a setup.py: the string literals of
    ``install_requires=[...]`` and ``extras_require={...: [...]}`` in a ``setup(...)`` call
    (also through a module-level name, ``a + b``, ``extras["torch"] = [...]``, and the
    Hugging Face lookup table: ``deps["torch"]`` or ``deps_list("torch")`` naming an entry of a
    list such as ``_deps = ["torch>=2.6", ...]``). setup.py is not edited: what to change in it is
    reported. ``tree``: the file's syntax tree when the caller has one."""
    try:
        tree = tree or ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [], []
    source = _SetupSource(tree)
    items: List[Written] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_setup(node.func):
            for keyword in node.keywords:
                if keyword.arg == "install_requires":
                    items += source.requirements(keyword.value)
                elif keyword.arg == "extras_require":
                    items += source.extras(keyword.value)
    unique = list({(item.requirement.text, item.line): item for item in items}.values())
    plan = plan_dependencies(unique, index, SETUP_PY)
    return plan.dependencies, plan.reported


class _SetupSource:
    """What a setup.py's module-level statements bind: names, the items set on a dict name
    (``extras["torch"] = ...``), and a catalogue of requirement strings by package name."""

    def __init__(self, tree: ast.Module):
        self.names: Dict[str, ast.expr] = {}
        self.items_set: Dict[str, List[ast.expr]] = {}
        self.catalogue: Dict[str, ast.Constant] = {}
        for node in tree.body:
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.names[target.id] = node.value
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    self.items_set.setdefault(target.value.id, []).append(node.value)
            if isinstance(node.value, (ast.List, ast.Tuple)):
                for element in node.value.elts:
                    requirement = _requirement_literal(element)
                    if requirement is not None:
                        self.catalogue.setdefault(requirement.key, element)

    def extras(self, node: ast.expr) -> List[Written]:
        name = node.id if isinstance(node, ast.Name) else ""
        node = _resolved(node, self.names)
        values = list(node.values) if isinstance(node, ast.Dict) else []
        items: List[Written] = []
        for value in values + self.items_set.get(name, []):
            items += self.requirements(value)
        return items

    def requirements(self, node: ast.expr, depth: int = 0) -> List[Written]:
        """The requirements written as string literals in a list, tuple or string (with + between),
        or named from the catalogue."""
        node = _resolved(node, self.names)
        if depth > 20:
            return []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.requirements(node.left, depth + 1) + self.requirements(node.right, depth + 1)
        elements = node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else [node]
        items = []
        for element in elements:
            for literal in self._literals(element):
                for text in literal.value.splitlines():
                    requirement = read_requirement(text)
                    if requirement is not None:
                        end = getattr(literal, "end_lineno", None) or literal.lineno
                        items.append(Written(requirement, literal.lineno, end, editable=False))
        return items

    def _literals(self, element: ast.expr) -> List[ast.Constant]:
        if isinstance(element, ast.Constant) and isinstance(element.value, str):
            return [element]
        if isinstance(element, ast.Subscript):  # deps["torch"]
            keys = [element.slice]
        elif isinstance(element, ast.Call):  # deps_list("torch", "accelerate")
            keys = element.args
        else:
            return []
        names = [key.value for key in keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
        return [self.catalogue[normalise(name)] for name in names if normalise(name) in self.catalogue]


def _requirement_literal(node: ast.expr) -> Optional[RequirementText]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" not in node.value:
        return read_requirement(node.value)
    return None


def _is_setup(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Name)
        and func.id == "setup"
        or isinstance(func, ast.Attribute)
        and func.attr == "setup"
    )


def _resolved(node: ast.expr, names: Dict[str, ast.expr]) -> ast.expr:
    seen = set()
    while isinstance(node, ast.Name) and node.id in names and node.id not in seen:
        seen.add(node.id)
        node = names[node.id]
    return node
