"""String literals in the rewrite pass: a plain literal's text, or an f-string's text with its
expressions as placeholders, is looked up in the index's string table (gpu2npu.rules.index)
and rebuilt. Bytes are never touched; the pass leaves docstrings and other prose alone."""

from __future__ import annotations

import libcst as cst

from gpu2npu.rules.index import PLACEHOLDER, StringTable


def rewrite_simple_string(node: cst.SimpleString, strings: StringTable):
    """(new node, target) or None. Only plain text literals (no escapes in the match)."""
    prefix = node.prefix.lower()
    if "b" in prefix:
        return None
    quote = node.quote
    inner = node.value[len(node.prefix) + len(quote) : -len(quote)]
    result = strings.rewrite(inner)
    if result is None:
        return None
    new_inner, target = result
    return node.with_changes(value=f"{node.prefix}{quote}{new_inner}{quote}"), target


def rewrite_formatted_string(node: cst.FormattedString, strings: StringTable):
    """(new node, target) or None, matching the f-string's shape (expressions as placeholders)."""
    shape = "".join(
        part.value if isinstance(part, cst.FormattedStringText) else PLACEHOLDER for part in node.parts
    )
    result = strings.rewrite(shape)
    if result is None:
        return None
    new_shape, target = result
    pieces = new_shape.split(PLACEHOLDER)
    if len(pieces) != sum(1 for p in node.parts if not isinstance(p, cst.FormattedStringText)) + 1:
        return None  # a rule that touched a placeholder: leave the f-string alone
    parts, piece_iter = [], iter(pieces)
    text = next(piece_iter)
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            continue
        if text:
            parts.append(cst.FormattedStringText(text))
        parts.append(part)
        text = next(piece_iter)
    if text:
        parts.append(cst.FormattedStringText(text))
    return node.with_changes(parts=parts), target
