"""One recorded change, with the reference tool's operation types."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Callable, List, Sequence

INSERT, MODIFY, DELETE = "INSERT", "MODIFY", "DELETE"


@dataclass(frozen=True, order=True)
class Change:
    start_line: int  # 1-based, in the original file
    end_line: int
    operation: str  # INSERT, MODIFY or DELETE
    message: str
    rule: str  # the id of the rule that made it
    cell: str = ""  # in a notebook: "cell 3, line 2" (the lines are the .ipynb file's)
    # APIs the change takes out of its lines (an optimization's float64 -> float32): the reports,
    # decided on the original code, drop their references there
    resolves: tuple = ()


@dataclass(frozen=True, order=True)
class Kept:
    """Code a rule keeps as it is because the rewrite would break it: reported as manual work."""

    line: int  # where the rewrite pass meets it: a dotted name's first line, an attribute's last
    key: str  # what the pass looks up: a qualified name, "*.<attribute>", or STRING + the literal's text
    end_line: int
    name: str  # as reported: the qualified name, torch.Tensor.<attribute>, or the literal
    rule_id: str
    works: bool = False  # it works on the NPU as it is (reported as a limit, not as unsupported)
    tip: str = ""  # what to do, where it is not the rule's own tip


STRING = (
    "str:"  # Kept.key of a string literal: STRING + its text + "#" + its number among equal ones on the line
)


def original_lines(original: bytes, changed: bytes) -> Callable[[int], int]:
    """Maps a line of ``changed`` to the line of ``original`` it comes from, so that every report
    row of a file counts the original's lines: a line that was inserted maps to the line it
    follows (as an inserted import's row names the import it follows), a rewritten one to the
    first line of what it replaces."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), changed.splitlines(), autojunk=False)
    opcodes = matcher.get_opcodes()

    def line_of(line: int) -> int:
        index = line - 1
        for tag, old_start, old_end, new_start, new_end in opcodes:
            if new_start <= index < new_end or (tag == "delete" and index == new_start):
                if tag == "equal":
                    return old_start + index - new_start + 1
                if tag == "insert":
                    return max(old_start, 1)
                return old_start + min(index - new_start, max(old_end - old_start - 1, 0)) + 1
        return max(len(original.splitlines()), 1)

    return line_of


def changed_line(original: bytes, changed: bytes, line: int) -> int:
    """The line of ``changed`` that ``line`` of ``original`` became (the inverse of original_lines;
    a rewritten line: the first line of what replaces it)."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), changed.splitlines(), autojunk=False)
    index = line - 1
    for tag, old_start, old_end, new_start, _ in matcher.get_opcodes():
        if old_start <= index < old_end:
            return new_start + (index - old_start if tag == "equal" else 0) + 1
    return max(len(changed.splitlines()), 1)


def in_original_lines(changes: Sequence[Change], line_of: Callable[[int], int]) -> List[Change]:
    return [
        dataclasses.replace(c, start_line=line_of(c.start_line), end_line=line_of(c.end_line))
        for c in changes
    ]


def kept_in_original_lines(kept: Sequence[Kept], line_of: Callable[[int], int]) -> List[Kept]:
    return [dataclasses.replace(k, line=line_of(k.line), end_line=line_of(k.end_line)) for k in kept]
