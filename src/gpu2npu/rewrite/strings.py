"""String literals in the rewrite pass: a plain literal's text, or an f-string's text with its
expressions as placeholders, is looked up in the index's string table (gpu2npu.rules.index)
and rebuilt. Bytes are never touched; the pass leaves docstrings and other prose alone.

A rebuilt literal must stay the same token with the same meaning around the rule's text: rule
strings are plain text, but a rule that put a quote, a backslash, a line break or a brace between
the quotes would end the literal (``'x' + code + ''``), start an escape or open an f-string
placeholder, where code runs. Such a literal is left as it is (``keeps_token``)."""

from __future__ import annotations

import functools
import re

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
    if not keeps_token(inner, new_inner, quote, node.prefix):
        return None
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
    if not keeps_token(shape, new_shape, node.quote, node.prefix):
        return None
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


# An escape sequence of a non-raw literal is one unit: a rewrite may neither split nor alter one
# (``'C:\cuda'`` -> ``'C:\npu'`` would turn a backslash into a line break).
_ESCAPE = r"\\(?:N\{[^}]*\}?|x[0-9a-fA-F]{0,2}|u[0-9a-fA-F]{0,4}|U[0-9a-fA-F]{0,8}|[0-7]{1,3}|.?)"
# A raw literal still pairs a backslash with what follows (``r'\''`` does not end there).
_RAW_ESCAPE = r"\\.?"
# Line breaks, tabs and other control characters, and PLACEHOLDER (an f-string's expressions).
_CONTROL = r"[\x00-\x1f\x7f-\x9f]"
# f-string placeholders and their escapes, and str.format's.
_BRACES = r"\{\{|\}\}|[{}]"


def keeps_token(old_inner: str, new_inner: str, quote: str, prefix: str) -> bool:
    """Whether the new text between the literal's quotes has the same escapes, quote characters,
    control characters and braces, in the same order, as the old: then the rule changed only
    plain text and the literal stays one literal of the same shape."""
    units = _special_units(quote[0], "r" in prefix.lower())
    return units.findall(old_inner) == units.findall(new_inner)


@functools.lru_cache(maxsize=None)
def _special_units(quote_char: str, raw: bool) -> "re.Pattern[str]":
    escape = _RAW_ESCAPE if raw else _ESCAPE
    return re.compile("|".join([escape, re.escape(quote_char), _CONTROL, _BRACES]), re.DOTALL)
