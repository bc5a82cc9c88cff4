"""Device and backend literals that become bound names (StringToNameRule): ``'cuda'`` ->
``DEVICE_TYPE``, ``'cuda:0'`` -> ``f'{DEVICE_TYPE}:0'``, ``f'cuda:{rank}'`` ->
``f'{DEVICE_TYPE}:{rank}'``."""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Tuple

import libcst as cst

from gpu2npu.rules.index import DEVICE_SUFFIX, StringName


def _entry(table: Mapping[str, StringName], word: str, rest: str) -> Optional[StringName]:
    entry = table.get(word)
    if entry is None or (rest and entry.match != "device") or not DEVICE_SUFFIX.match(rest):
        return None
    return entry


def names_literal(table: Mapping[str, StringName], text: str) -> bool:
    """Whether a plain literal of this text becomes a bound name (``'cuda'``, ``'cuda:0'``)."""
    word, colon, rest = text.partition(":")
    return _entry(table, word, colon + rest) is not None


def literal_rewritten(index) -> Callable[[str], bool]:
    """Whether a rule of the index would rewrite a plain literal of a text (into another string
    or into a bound name)."""

    def rewritten(text: str) -> bool:
        return index.strings.rewrite(text) is not None or bool(
            index.string_names and names_literal(index.string_names, text)
        )

    return rewritten


def named_simple_string(
    node: cst.SimpleString, table: Mapping[str, StringName], compared: bool, bound: Callable[[str], str]
) -> Optional[Tuple[cst.BaseExpression, StringName]]:
    """The name (or f-string) for a literal, or None when no rule applies."""
    if "b" in node.prefix.lower() or not isinstance(node.evaluated_value, str):
        return None
    text = node.evaluated_value
    word, colon, rest = text.partition(":")
    entry = _entry(table, word, colon + rest)
    if entry is None:
        return None
    name = bound(entry.compared_name if compared else entry.name)
    if not colon:
        return cst.Name(name), entry
    escaped = (colon + rest).replace("{", "{{").replace("}", "}}")
    quote = node.quote
    return cst.parse_expression(f"f{quote}{{{name}}}{escaped}{quote}"), entry


def named_formatted_string(
    node: cst.FormattedString, table: Mapping[str, StringName], compared: bool, bound: Callable[[str], str]
) -> Optional[Tuple[cst.BaseExpression, StringName]]:
    """``f'cuda:{rank}'`` -> ``f'{DEVICE_TYPE}:{rank}'``, ``f'cuda'`` -> ``DEVICE_TYPE``, or None."""
    parts = list(node.parts)
    if not parts or not isinstance(parts[0], cst.FormattedStringText):
        return None
    first = parts[0].value
    word, colon, rest = first.partition(":")
    if len(parts) == 1 and not colon:  # no field: the plain literal
        entry = _entry(table, word, "")
        return (cst.Name(bound(entry.compared_name if compared else entry.name)), entry) if entry else None
    placeholder = len(parts) > 1 and not rest
    if not colon or not (placeholder and len(parts) == 2 or (not placeholder and len(parts) == 1)):
        return None
    entry = _entry(table, word, colon + (rest if rest else "{}"))
    if entry is None:
        return None
    name = bound(entry.compared_name if compared else entry.name)
    head = [cst.FormattedStringExpression(cst.Name(name)), cst.FormattedStringText(colon + rest)]
    return node.with_changes(parts=head + parts[1:]), entry
