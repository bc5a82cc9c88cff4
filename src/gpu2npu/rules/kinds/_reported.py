"""What the kinds of rules that report (and change nothing) share: their categories and checks."""

from __future__ import annotations

import re
from typing import Optional

# The check categories a reported item may have (gpu2npu.filekinds.base): blocks running on the NPU,
# works after a change the user makes, not known, a note.
CATEGORIES = ("unsupported", "limited", "unknown", "mention")


def report_problem(fields) -> Optional[str]:
    """A problem with a reporting rule's ``tip`` and ``category``, or None."""
    if not fields["tip"].strip():
        return "'tip' must say what to do"
    if fields["category"] not in CATEGORIES:
        return f"'category' must be one of {', '.join(CATEGORIES)}, not {fields['category']!r}"
    return None


def regex_problem(field: str, pattern: Optional[str]) -> Optional[str]:
    """A problem if ``pattern`` is given and is not a regular expression."""
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"'{field}' must be a regular expression ({exc})"
    return None
