"""ReplaceStringRule (msFmkTransplt): rewrite string literals.

``match`` says how a literal is compared with ``str_old`` (the reference's ``strict: true`` is
``exact``, ``strict: false`` is ``substring``):

* ``exact``: the whole literal (``'cuda'``, ``"nccl"``);
* ``device``: a device string: the old device alone or with an index or a placeholder --
  ``'cuda:0'``, ``'cuda:%d'``, ``'cuda:{}'``, ``f'cuda:{rank}'``, ``'cuda:'`` (for ``+ str(i)``);
* ``prefix``: the literal starts with it (``'torch.cuda.FloatTensor'``);
* ``substring``: anywhere in the literal.

Docstrings and other bare string statements are prose and never touched; neither are bytes.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from gpu2npu.rules.index import StringTarget
from gpu2npu.rules.model import Field

NAME = "ReplaceStringRule"
FIELDS = {
    "str_old": Field(str, required=True, help="text to find"),
    "str_new": Field(str, required=True, help="replacement text"),
    "strict": Field(bool, default=True, help="msFmkTransplt: true = exact literal, false = substring"),
    "match": Field(str, help="exact, device, prefix or substring (overrides strict)"),
}
MATCHES = ("exact", "device", "prefix", "substring")
# What may follow the device type in a device string: an index or a formatting placeholder.
DEVICE_SUFFIX = re.compile(r"^(:([0-9]+|%[sd]|\{[^{}]*\})?)?$")
PLACEHOLDER = "\x00"  # stands for an f-string expression when matching


def validate(fields):
    if fields["match"] is not None and fields["match"] not in MATCHES:
        return f"'match' must be one of {', '.join(MATCHES)}, not {fields['match']!r}"
    if not fields["str_old"]:
        return "'str_old' must not be empty"
    return None


def match_mode(fields) -> str:
    return fields["match"] or ("exact" if fields["strict"] else "substring")


def compile(rule, index):
    target = StringTarget(rule["str_old"], rule["str_new"], rule.id, match_mode(rule.fields))
    if target.match == "exact":
        index.strings_exact[target.old] = target
    else:
        index.strings_other.append(target)


def trigger_words(rule):
    return {rule["str_old"]}


def rewrite_text(text: str, index) -> Optional[tuple]:
    """(new text, target) for a literal's text, or None when no string rule applies."""
    target = index.strings_exact.get(text)
    if target is not None:
        return target.new, target
    for target in index.strings_other:
        new = _apply(target, text)
        if new is not None:
            return new, target
    return None


def _apply(target: StringTarget, text: str) -> Optional[str]:
    old = target.old
    if target.match == "substring":
        return text.replace(old, target.new) if old in text else None
    if not text.startswith(old):
        return None
    rest = text[len(old):]
    if target.match == "device" and not DEVICE_SUFFIX.match(rest.replace(PLACEHOLDER, "{}")):
        return None
    return target.new + rest


def rewrite_simple_string(node: cst.SimpleString, index):
    """(new node, target) or None. Only plain text literals (no escapes in the match)."""
    prefix = node.prefix.lower()
    if "b" in prefix:
        return None
    quote = node.quote
    inner = node.value[len(node.prefix) + len(quote) : -len(quote)]
    result = rewrite_text(inner, index)
    if result is None:
        return None
    new_inner, target = result
    return node.with_changes(value=f"{node.prefix}{quote}{new_inner}{quote}"), target


def rewrite_formatted_string(node: cst.FormattedString, index):
    """(new node, target) or None, matching the f-string's shape (expressions as placeholders)."""
    shape = "".join(
        part.value if isinstance(part, cst.FormattedStringText) else PLACEHOLDER for part in node.parts
    )
    result = rewrite_text(shape, index)
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


def message(target: StringTarget) -> str:
    if target.label == "environment variable":
        return f"change environment variable {target.old} to {target.new}"
    return f'replace string "{target.old}" with "{target.new}"'
