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
        return None

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


def match_mode(fields) -> str:
    return fields["match"] or ("exact" if fields["strict"] else "substring")
