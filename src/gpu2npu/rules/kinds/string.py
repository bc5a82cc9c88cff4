"""ReplaceStringRule (msFmkTransplt): rewrite string literals.

``match`` says how a literal is compared with ``str_old`` (the reference's ``strict: true`` is
``exact``, ``strict: false`` is ``substring``):

* ``exact``: the whole literal (``'cuda'``, ``"nccl"``);
* ``device``: a device string: the old device alone or with an index or a placeholder --
  ``'cuda:0'``, ``'cuda:%d'``, ``'cuda:{}'``, ``f'cuda:{rank}'``, ``'cuda:'`` (for ``+ str(i)``);
* ``prefix``: the literal starts with it (``'torch.cuda.FloatTensor'``);
* ``substring``: anywhere in the literal.

Docstrings and other bare string statements are prose and never touched; neither are bytes.
``str_old`` and ``str_new`` are plain text: they are written between a literal's quotes, so a
quote, a backslash, a brace or a control character in them could end the literal and run code
(``x' + code + '``), start an escape or open an f-string placeholder; validation refuses them.
"""

from __future__ import annotations

import re

from gpu2npu.rules.index import STRING_MATCHES, StringTarget
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.model import Field


class ReplaceString(RuleKind):
    name = "ReplaceStringRule"
    fields = {
        "str_old": Field(str, required=True, help="text to find"),
        "str_new": Field(str, required=True, help="replacement text"),
        "strict": Field(bool, default=True, help="msFmkTransplt: true = exact literal, false = substring"),
        "match": Field(str, help="exact, device, prefix or substring (overrides strict)"),
    }

    def validate(self, fields):
        if fields["match"] is not None and fields["match"] not in STRING_MATCHES:
            return f"'match' must be one of {', '.join(STRING_MATCHES)}, not {fields['match']!r}"
        if not fields["str_old"]:
            return "'str_old' must not be empty"
        return _plain_text_problem(fields)

    def compile(self, rule, index):
        old, new = rule["str_old"], rule["str_new"]
        index.strings.add(
            StringTarget(old, new, rule.id, match_mode(rule.fields), f'replace string "{old}" with "{new}"')
        )

    def trigger_words(self, rule):
        return {rule["str_old"]}

    def describe(self, rule):
        return f"string '{rule['str_old']}' -> '{rule['str_new']}'"

    def subject(self, rule):
        return f'"{rule["str_old"]}"'


# What a rule string may not hold: quotes, backslashes, braces, control characters (line breaks).
NOT_PLAIN_TEXT = re.compile(r"[\'\"\\{}\x00-\x1f\x7f-\x9f]")


def _plain_text_problem(fields):
    """A problem message naming the first field and character that is not plain text, or None."""
    for key in ("str_old", "str_new"):
        found = NOT_PLAIN_TEXT.search(fields[key])
        if found:
            return (
                f"'{key}' holds {found.group()!r}, but rule strings are plain text "
                "(no quotes, backslashes, braces or control characters)"
            )
    return None


def match_mode(fields) -> str:
    return fields["match"] or ("exact" if fields["strict"] else "substring")
