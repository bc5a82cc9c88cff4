"""KeepArgumentStringRule: a string passed to a keyword of certain calls keeps its text and is
reported, where the callee has no NPU value for it: Lightning's ``Trainer(accelerator="cuda")``
would become ``accelerator="npu"``, which Lightning does not know (no NPU accelerator is built
in). Kept the same as in a config file (G2N832), the tip says what to register instead.
``values``: the literals kept (and reported, whether or not a rule would rewrite them);
``works``: the call works as it is (a limit) rather than needing work before it runs on NPU;
``position``: the argument's place where it is passed positionally too (onnxruntime's
``OrtValue.ortvalue_from_numpy(array, "cuda", 0)``).

    rules:
      KeepArgumentStringRule:
        - {id: G2N160, func_names: [lightning.Trainer], keyword: accelerator, values: [cuda, gpu],
           works: true, tip: "..."}
"""

import re

from gpu2npu.rules.index import ArgumentStrings
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_identifier, last, listed_names
from gpu2npu.rules.model import Field


class KeepArgumentString(RuleKind):
    name = "KeepArgumentStringRule"
    fields = {
        "func_names": Field(list, required=True, help="qualified names of the callees"),
        "keyword": Field(str, required=True, help="the keyword whose string is kept"),
        "values": Field(list, required=True, help="the literals kept and reported"),
        "works": Field(bool, default=False, help="the call works as it is on NPU (reported as a limit)"),
        "position": Field(
            int, default=-1, help="its place among the positional arguments (-1: keyword only)"
        ),
        "tip": Field(str, required=True, help="what to do about a string that is kept"),
    }

    def validate(self, fields):
        if not is_identifier(fields["keyword"]):
            return f"'keyword' must be a Python identifier, not {fields['keyword']!r}"
        if not fields["values"] or not all(isinstance(v, str) and is_identifier(v) for v in fields["values"]):
            return "'values' must list words such as cuda or gpu"
        if fields["position"] < -1:
            return f"'position' must be 0 or more (or -1 for a keyword only), not {fields['position']}"
        return check_names(**listed_names("func_names", fields["func_names"]))

    def compile(self, rule, index):
        index.argument_strings.append(
            ArgumentStrings(
                frozenset(rule["func_names"]),
                rule["keyword"],
                frozenset(rule["values"]),
                rule.id,
                rule["works"],
                rule["position"],
            )
        )

    def triggers(self, rule):
        """The keyword given one of the values (or one of the values anywhere, where the argument
        may be positional), in a file naming one of the callees."""
        callees = "|".join(sorted({re.escape(last(name)) for name in rule["func_names"]}))
        values = "|".join(sorted(re.escape(value) for value in rule["values"]))
        keyword = "" if rule["position"] >= 0 else rf"\b{re.escape(rule['keyword'])}\s*=\s*"
        return {(rf"\b(?:{callees})\b", rf"{keyword}[rRuU]?['\"](?:{values})['\"]")}

    def describe(self, rule):
        return f"keep {rule['keyword']}= {'/'.join(rule['values'])} of {', '.join(rule['func_names'])}"
