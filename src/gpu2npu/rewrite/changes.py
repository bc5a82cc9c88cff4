"""One recorded change, with the reference tool's operation types."""

from __future__ import annotations

from dataclasses import dataclass

INSERT, MODIFY, DELETE = "INSERT", "MODIFY", "DELETE"


@dataclass(frozen=True, order=True)
class Change:
    start_line: int  # 1-based, in the original file
    end_line: int
    operation: str  # INSERT, MODIFY or DELETE
    message: str
    rule: str  # the id of the rule that made it
