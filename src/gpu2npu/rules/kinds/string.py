"""ReplaceStringRule (msFmkTransplt): rewrite string literals.

``match`` says how a literal is compared with ``str_old`` (the reference's ``strict: true`` is
``exact``, ``strict: false`` is ``substring``):

* ``exact``: the whole literal (``'cuda'``, ``"nccl"``);
* ``device``: a device string: the old device alone or with an index or a placeholder --
  ``'cuda:0'``, ``'cuda:%d'``, ``'cuda:{}'``, ``f'cuda:{rank}'``, ``'cuda:'`` (for ``+ str(i)``);
* ``prefix``: the literal is one word that starts with it (``'torch.cuda.FloatTensor'``; not a
  message such as ``'torch.cuda.FloatTensor or torch.cuda.HalfTensor'``);
* ``substring``: anywhere in the literal.

With ``compared_with`` the literal changes only where it is compared (``==``, ``!=``, ``in``,
``not in``, also as an item of a list, tuple or set) with a call of one of those functions
(``dist.get_backend() in ('gloo', 'nccl')``). Compared with anything else (``args.backend ==
'nccl'``, which may still hold the text the user gave) it is kept and reported with ``tip``;
not compared at all (``init_process_group('nccl')``) it stays without a report, unless
``also_uncompared`` says the patcher misses it there too (transfer_to_npu changes only a lower-case
``'nccl'``, so ``backend="NCCL"`` must become ``"HCCL"`` wherever it is not compared with else).

Docstrings and other bare string statements are prose and never touched; neither are bytes.
``str_old`` and ``str_new`` are plain text: they are written between a literal's quotes, so a
quote, a backslash, a brace or a control character in them could end the literal and run code
(``x' + code + '``), start an escape or open an f-string placeholder; validation refuses them.
"""

from __future__ import annotations

import re

from gpu2npu.rules.index import STRING_MATCHES, StringTarget
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, listed_names
from gpu2npu.rules.model import Field


class ReplaceString(RuleKind):
    name = "ReplaceStringRule"
    fields = {
        "str_old": Field(str, required=True, help="text to find"),
        "str_new": Field(str, required=True, help="replacement text"),
        "strict": Field(bool, default=True, help="msFmkTransplt: true = exact literal, false = substring"),
        "match": Field(str, help="exact, device, prefix or substring (overrides strict)"),
        "compared_with": Field(
            list, default=[], help="only where compared with a call of these (dist.get_backend() == 'nccl')"
        ),
        "tip": Field(
            str, default="", help="with compared_with: what to do where the literal is compared with else"
        ),
        "also_uncompared": Field(
            bool, default=False, help="with compared_with: also rewrite the literal where it is not compared"
        ),
    }

    def validate(self, fields):
        if fields["match"] is not None and fields["match"] not in STRING_MATCHES:
            return f"'match' must be one of {', '.join(STRING_MATCHES)}, not {fields['match']!r}"
        if not fields["str_old"]:
            return "'str_old' must not be empty"
        if fields["also_uncompared"] and not fields["compared_with"]:
            return "'also_uncompared' goes with 'compared_with'"
        if fields["compared_with"] and not fields["tip"]:
            return "a rule with 'compared_with' needs a 'tip' for the comparisons it leaves alone"
        return check_names(**listed_names("compared_with", fields["compared_with"])) or _plain_text_problem(
            fields
        )

    def compile(self, rule, index):
        old, new = rule["str_old"], rule["str_new"]
        compared_with = frozenset(rule["compared_with"])
        uncompared = rule["also_uncompared"]
        where = " in a comparison" if compared_with and not uncompared else ""
        message = f'replace string "{old}" with "{new}"{where}'
        target = StringTarget(old, new, rule.id, match_mode(rule.fields), message, compared_with, uncompared)
        index.strings.add(target)

    def trigger_words(self, rule):
        return {rule["str_old"]}

    def describe(self, rule):
        calls = ", ".join(f"{name}()" for name in rule["compared_with"])
        where = f" where compared with {calls}" if calls else ""
        where += " or not compared at all" if rule["also_uncompared"] else ""
        return f"string '{rule['str_old']}' -> '{rule['str_new']}'{where}"

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
