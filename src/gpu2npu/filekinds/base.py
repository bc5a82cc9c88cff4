"""What every file kind shares: its outcome, what it reports, and edits by byte span.

Kinds edit files by replacing spans of the original bytes, never by writing a parsed document
out again: comments, quoting, layout, line endings and bytes that are not UTF-8 all stay as
they were except in the spans a rule changes.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

from gpu2npu.rewrite.changes import INSERT, MODIFY, Change

# Check categories (gpu2npu.commands.check.findings) a reported item may have.
UNSUPPORTED, LIMITED, UNKNOWN, MENTION = "unsupported", "limited", "unknown", "mention"
NOT_MIGRATED = "not-migrated"  # the rule of a row about CUDA named where no rule acts
# Words that name CUDA or a CUDA-only library in any text (not "barracuda"); a file's mentions no
# row covers are reported.
MENTION_PATTERN = re.compile(  # also a CUDA build's tag: torch==1.8.0+cu111, download.pytorch.org/whl/cu121
    rb"(?i)(?<![a-z])(cuda|nccl|cudnn|nvcc|nvidia-smi|flash[-_]attn|xformers|apex|triton|pynvml|cupy"
    rb"|bitsandbytes|(?<![0-9])cu\d{2,3}(?![0-9]))(?![a-z])"
)


@dataclass(frozen=True, order=True)
class Reported:
    """Something a kind found and left as it is: manual work, with what to do."""

    line: int  # 1-based, in the file (a notebook: in the .ipynb file)
    end_line: int
    subject: str  # what was found: "nvidia-smi", "nvidia/cuda:12.1.0-devel-ubuntu22.04", "flash-attn"
    tip: str  # what to do
    rule: str  # the rule id, or the kind of row ("not-migrated")
    category: str = LIMITED  # UNSUPPORTED, LIMITED, UNKNOWN or MENTION
    cell: str = ""  # a notebook's "cell 3, line 2"


@dataclass(frozen=True, order=True)
class PlannedDependency:
    """One row of the dependency plan: a requirement and what to do with it on the NPU."""

    install_order: int  # the step in which to install it (torch first, torch_npu next, ...)
    package: str  # the name as the rule knows it
    requirement: str  # as written in the file ("flash-attn>=2.3"), or what was added
    line: int  # where it is written (0: not written anywhere, the plan adds it)
    status: str  # "added", "to install" (no file lists it: line 0), "pinned", "drop-in", "works", ...
    npu_route: str  # what to install or use instead
    action: str  # what to do
    conflicts: str = ""
    source: str = ""  # where the facts come from (kb ids)
    rule: str = ""


@dataclass
class KindOutcome:
    new_bytes: Optional[bytes] = None  # None: the file is copied unchanged
    changes: List[Change] = field(default_factory=list)
    reported: List[Reported] = field(default_factory=list)
    dependencies: List[PlannedDependency] = field(default_factory=list)
    skipped: str = ""  # why the file could not be read as its kind (copied unchanged)
    lines: int = 0
    calls: List[Any] = field(default_factory=list)  # code in the file: uses of analysed APIs (CallSite)
    kept: List[Any] = field(default_factory=list)  # code in the file: what the rules keep (Kept)


@dataclass(frozen=True)
class KindContext:
    """What a kind may use: the compiled rules (``index.rules_of(kind)``, the string table) and,
    for kinds holding Python code (notebooks), the Python migration of one piece of source:
    ``migrate_python(source, rel) -> (new source or None, changes, skipped reason, kept code)``, and its
    analysis: ``analyse_python(source, rel) -> (API uses, kept code)``, lines of ``source``
    (empty lists when the run wants no API reports)."""

    index: Any  # gpu2npu.rules.index.RuleIndex
    migrate_python: Callable[[bytes, str], Tuple[Optional[bytes], List[Change], str, List[Any]]]
    analyse_python: Callable[[bytes, str], Tuple[List[Any], List[Any]]] = lambda source, rel: ([], [])


def mentions_left(data: bytes, outcome: "KindOutcome") -> List[Reported]:
    """One row for the CUDA words of a file on lines no change or reported item covers (in
    comments, prose, or under keys and options no rule knows), so a kind never passes over them
    in silence; none when there are none."""
    covered = set()
    for start, end in [(c.start_line, c.end_line) for c in outcome.changes] + [
        (r.line, r.end_line) for r in outcome.reported
    ]:
        covered.update(range(start, end + 1))
    lines = LineIndex(data)
    left = [m for m in MENTION_PATTERN.finditer(data) if lines.line_of(m.start()) not in covered]
    if not left:
        return []
    words = sorted({match.group(1).decode("ascii").lower() for match in left})
    count = f"{len(left)} CUDA mention{'s' if len(left) > 1 else ''}"
    subject = f"{count} left as written: {', '.join(words)}"
    tip = (
        "in comments, prose or settings no gpu2npu rule knows (a key, an option, a path): "
        "check them by hand for Ascend NPU"
    )
    first, last = lines.line_of(left[0].start()), lines.line_of(left[-1].start())
    return [Reported(first, last, subject, tip, NOT_MIGRATED, MENTION)]


class LineIndex:
    """Line numbers of byte offsets in one file."""

    def __init__(self, data: bytes):
        self.starts = [0]
        position = data.find(b"\n")
        while position != -1:
            self.starts.append(position + 1)
            position = data.find(b"\n", position + 1)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


class CharOffsets:
    """Byte offsets of character positions in text decoded from bytes with ``surrogateescape``
    (a parser works on the text, the edits on the bytes)."""

    def __init__(self, text: str):
        self.ascii = text.isascii()
        self.text = text
        self._offsets: Optional[List[int]] = None

    def byte_offset(self, index: int) -> int:
        if self.ascii:
            return index
        if self._offsets is None:
            offsets, total = [0], 0
            for char in self.text:
                total += len(char.encode("utf-8", "surrogateescape"))
                offsets.append(total)
            self._offsets = offsets
        return self._offsets[index]


def decode(data: bytes) -> str:
    """Text for a parser; bytes that are not UTF-8 stay as lone surrogates (re-encoded unchanged)."""
    return data.decode("utf-8", "surrogateescape")


@dataclass(frozen=True, order=True)
class SpanEdit:
    start: int  # byte offsets in the original
    end: int
    new: bytes
    message: str
    rule: str
    operation: str = MODIFY


class SpanEdits:
    """Edits of one file by byte span: each records its change row; overlapping edits are
    refused (the first one stays), so no two rules ever write into the same bytes."""

    def __init__(self, data: bytes):
        self.data = data
        self.lines = LineIndex(data)
        self.edits: List[SpanEdit] = []
        self._spans: List[Tuple[int, int]] = []  # of the edits, sorted: a new one is checked by bisection

    def replace(
        self, start: int, end: int, new: bytes, message: str, rule: str, operation: str = MODIFY
    ) -> bool:
        if self.data[start:end] == new or self._overlaps(start, end):
            return False
        self.edits.append(SpanEdit(start, end, new, message, rule, operation))
        bisect.insort(self._spans, (start, end))
        return True

    def _overlaps(self, start: int, end: int) -> bool:
        """Whether [start, end) shares bytes with an edit (an insertion: lies inside one or at
        its start). Edits never overlap, so sorted by start their ends grow too: the last one
        starting before ``end`` is the only one that can reach into the new span."""
        after = bisect.bisect_left(self._spans, (end, -1))
        if after and self._spans[after - 1][1] > start:
            return True
        return start == end and after < len(self._spans) and self._spans[after][0] == start

    def insert(self, offset: int, new: bytes, message: str, rule: str) -> bool:
        return self.replace(offset, offset, new, message, rule, INSERT)

    def outcome(self, outcome: Optional[KindOutcome] = None) -> KindOutcome:
        """The edits applied: new bytes (None when there are none) and one change row each."""
        outcome = outcome if outcome is not None else KindOutcome()
        if not self.edits:
            return outcome
        pieces, position = [], 0
        for edit in sorted(self.edits):
            pieces += [self.data[position : edit.start], edit.new]
            position = edit.end
        pieces.append(self.data[position:])
        outcome.new_bytes = b"".join(pieces)
        for edit in sorted(self.edits):
            start = self.lines.line_of(edit.start)
            end = self.lines.line_of(max(edit.start, edit.end - 1))
            outcome.changes.append(Change(start, end, edit.operation, edit.message, edit.rule))
        outcome.changes.sort()
        return outcome
