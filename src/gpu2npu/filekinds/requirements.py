"""pip requirements files (``requirements*.txt``, ``dev-requirements.txt``, ``constraints*.txt``,
``requirements.in``, any ``.txt`` under a folder named ``requirements``).

Read line by line the way pip reads them: a line ending in a backslash goes on with the next,
a ``#`` at the start or after whitespace starts a comment, options (``-r``, ``-e``,
``--index-url``...) are told from requirements. A ``torch`` requirement is pinned to the target
version when its specifier allows it (its extras, marker and comment stay), and
``torch_npu==<release>`` is added on the next line (with torch's marker and line ending) unless
the file already requires torch_npu. Everything else is left as written: CUDA-only packages,
indexes and local versions that fetch CUDA builds are reported and listed in the dependency plan.
A file that pins hashes is not edited (the new pins would need hashes too): it is reported.
"""

from __future__ import annotations

import bisect
import posixpath
from dataclasses import dataclass
from typing import List, Optional, Tuple

from gpu2npu.filekinds import FileKind
from gpu2npu.filekinds._dependencies import (
    MIB,
    Written,
    index_report,
    pinned_requirement,
    plan_dependencies,
    read_pip_line,
    why_unread,
)
from gpu2npu.filekinds.base import KindContext, KindOutcome, SpanEdits, decode

# Lock files with hashes run to a few hundred KiB; reading 1 MiB takes about a second.
MAX_BYTES = 4 * MIB
HASHES = (
    "the file checks hashes (--hash): pin torch=={torch} and add torch_npu=={torch_npu} after it with "
    "their hashes (pip hash, pip-compile --generate-hashes)"
)


@dataclass
class LogicalLine:
    """Physical lines joined where one ends in a backslash, as pip joins them."""

    text: str  # the joined text, without backslashes and line endings
    pieces: List[Tuple[int, int, str]]  # (index in text, byte offset in the file, text)
    first: int  # line numbers, 1-based
    last: int
    end: int  # byte offset after the last line and its line ending
    eol: bytes  # the line ending of the last line (b"" at the end of the file)

    def byte_of(self, index: int) -> int:
        found = bisect.bisect_right([start for start, _, _ in self.pieces], index) - 1
        start, offset, piece = self.pieces[max(found, 0)]
        return offset + len(piece[: index - start].encode("utf-8", "surrogateescape"))


class RequirementsFile(FileKind):
    name = "requirements"
    order = 10

    def claims(self, rel, head):
        folder, base = posixpath.split(rel.lower())
        stem, suffix = posixpath.splitext(base)
        if suffix not in (".txt", ".in"):
            return False
        in_folder = posixpath.basename(folder) == "requirements"
        return in_folder or "requirements" in stem or (suffix == ".txt" and stem.startswith("constraints"))

    def migrate(self, data: bytes, rel: str, context: KindContext) -> KindOutcome:
        problem = why_unread(data, MAX_BYTES, "a requirements file")
        if problem:
            return KindOutcome(skipped=problem)
        start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        lines = logical_lines(data, start)
        items, reported, hashes = [], [], False
        for line in lines:
            pip = read_pip_line(without_comment(line.text))
            hashes = hashes or pip.hashes
            found = index_report(context.index, pip.option, pip.value, line.first, line.last)
            if found is not None:
                reported.append(found)
            if pip.requirement is not None:
                editable = not pip.option and not pip.requirement.url
                items.append(Written(pip.requirement, line.first, line.last, editable, (line, pip.offset)))
        if hashes:
            items = [Written(i.requirement, i.line, i.end_line, False, i.where) for i in items]
        plan = plan_dependencies(items, context.index, HASHES)
        edits = SpanEdits(data)
        eol = first_line_ending(data)
        for pin in plan.pins:
            line, base = items[pin.item].where
            begin, end, new = pinned_requirement(items[pin.item].requirement, pin.version)
            span = line.byte_of(base + begin), line.byte_of(base + end)
            edits.replace(*span, new.encode("utf-8", "surrogateescape"), pin.message, pin.rule)
        for addition in plan.additions:
            line, _ = items[addition.item].where
            text = addition.requirement.encode("utf-8", "surrogateescape")
            new = text + line.eol if line.eol else eol + text
            edits.insert(line.end, new, addition.message, addition.rule)
        outcome = edits.outcome()
        outcome.reported = sorted(reported + plan.reported)
        outcome.dependencies = plan.dependencies
        return outcome


def logical_lines(data: bytes, start: int = 0) -> List[LogicalLine]:
    lines: List[LogicalLine] = []
    pending: Optional[LogicalLine] = None
    number, position = 0, start
    while position < len(data):
        number += 1
        newline = data.find(b"\n", position)
        end = len(data) if newline == -1 else newline + 1
        content_end = end - (newline != -1)
        if content_end > position and data[content_end - 1 : content_end] == b"\r":
            content_end -= 1
        text = decode(data[position:content_end])
        continued = text.endswith("\\") and not text.lstrip().startswith("#")
        piece = text.rstrip("\\") if continued else text
        if pending is None:
            pending, length = LogicalLine("", [], number, number, end, b""), 0
        pending.pieces.append((length, position, piece))
        length += len(piece)
        pending.last, pending.end, pending.eol = number, end, data[content_end:end]
        if not continued:
            lines.append(_joined(pending))
            pending = None
        position = end
    if pending is not None:
        lines.append(_joined(pending))
    return lines


def _joined(line: LogicalLine) -> LogicalLine:
    line.text = "".join(piece for _, _, piece in line.pieces)
    return line


def without_comment(text: str) -> str:
    """The line before its comment: a '#' at the start or after whitespace (as pip reads it; a
    '#' inside a URL, ``#egg=apex``, starts none)."""
    position = text.find("#")
    while position != -1:
        if position == 0 or text[position - 1].isspace():
            return text[:position]
        position = text.find("#", position + 1)
    return text


def first_line_ending(data: bytes) -> bytes:
    newline = data.find(b"\n")
    return b"\r\n" if newline > 0 and data[newline - 1 : newline] == b"\r" else b"\n"
