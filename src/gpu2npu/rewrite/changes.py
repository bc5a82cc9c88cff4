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


@dataclass(frozen=True, order=True)
class Kept:
    """Code a rule keeps as it is because the rewrite would break it: reported as manual work."""

    line: int  # where the rewrite pass meets it: a dotted name's first line, an attribute's last
    key: str  # what the pass looks up: a qualified name, "*.<attribute>", or STRING + the literal's text
    end_line: int
    name: str  # as reported: the qualified name, torch.Tensor.<attribute>, or the literal
    rule_id: str
    works: bool = False  # it works on the NPU as it is (reported as a limit, not as unsupported)


STRING = (
    "str:"  # Kept.key of a string literal: STRING + its text + "#" + its number among equal ones on the line
)
