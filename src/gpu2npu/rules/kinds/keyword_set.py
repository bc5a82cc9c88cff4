"""KeywordSetRule (``migrate --optimize``): a call of ``func_name`` that does not pass
``keyword`` gets ``keyword=value`` (``amp.initialize(..., combine_grad=True)``,
``DataLoader(..., drop_last=True)``). A call that passes it already, by keyword or by position
(``parameters`` lists the callee's parameters in order), keeps the caller's choice; so does one
that passes a parameter of ``not_with`` (``batch_sampler`` excludes ``drop_last``). A call with
``*args`` or ``**kwargs`` may pass it unseen: it is kept and reported with the rule's tip.

    rules:
      KeywordSetRule:
        - id: G2N2020
          func_name: apex.amp.initialize
          keyword: combine_grad
          value: "True"
          parameters: [models, optimizers, ..., combine_grad]
          optimization: {category: amp, equivalence: tolerance, doc: ...}
          tip: ...
"""

from __future__ import annotations

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_expression, name_subject
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import append_keyword, passed_parameters


class KeywordSet(RuleKind):
    name = "KeywordSetRule"
    fields = {
        "func_name": Field(str, required=True, dotted=True, help="qualified name of the callee"),
        "keyword": Field(str, required=True, help="the parameter to pass"),
        "value": Field(str, required=True, help="its value, as source text"),
        "parameters": Field(list, required=True, help="the callee's parameters, in order"),
        "not_with": Field(list, default=(), help="parameters that exclude passing keyword"),
        "tip": Field(str, required=True, help="what to do where a call is kept"),
    }

    def validate(self, fields):
        problem = check_names(func_name=fields["func_name"], keyword=fields["keyword"])
        if problem:
            return problem
        if not is_expression(fields["value"]):
            return f"'value' must be a Python expression, not {fields['value']!r}"
        if fields["keyword"] not in fields["parameters"] or not set(fields["not_with"]) <= set(
            fields["parameters"]
        ):
            return "'parameters' must name 'keyword' and every parameter of 'not_with'"
        return None

    def compile(self, rule, index):
        index.add_call_edit(rule["func_name"], rule, self.apply)

    def trigger_names(self, rule):
        return {rule["func_name"]}

    def describe(self, rule):
        return f"{rule['func_name']}(..., {rule['keyword']}={rule['value']})"

    def subject(self, rule):
        return name_subject(rule["func_name"])

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        passed = passed_parameters(call, rule["parameters"])
        if passed is None:
            ctx.keep(rule["func_name"], rule.id)
            return call
        if rule["keyword"] in passed or passed & set(rule["not_with"]):
            return call
        ctx.record("MODIFY", f"pass {rule['keyword']}={rule['value']} to {rule['func_name']}", rule.id)
        return append_keyword(call, rule["keyword"], cst.parse_expression(rule["value"]))
