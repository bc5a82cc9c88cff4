"""OptimizeCallRule (``migrate --optimize``): a call of ``old_name`` made a call of ``new_name``,
an NPU implementation of the same thing (a fused optimizer), where the call passes only what
``new_name`` documents: at most ``positional`` positional arguments and keywords of
``keywords`` (in the order of new_name's parameters), no ``*args`` or ``**kwargs``, and every
argument of ``needs`` (those new_name has no default for, such as NpuFusedSGD's ``lr``, which
torch.optim.SGD defaults). Where the two callees differ, ``fixed`` names parameters of
``old_name`` that ``new_name`` lacks, with the one value ``new_name`` behaves as (apex
FusedAdam's ``adam_w_mode: "True"``): a call passing exactly that is rewritten without it; and
``defaults`` gives old_name's default for a parameter whose default new_name changes (FusedAdam's
``weight_decay: "0"``, where NpuFusedAdamW's is 1e-2), passed where the call does not pass it. Any
other call keeps ``old_name`` and is reported with the rule's tip. So does every call where a
Python file of the project calls a method of ``refuses`` (``zero_grad(set_to_none)``) with that
keyword other than a literal False: new_name raises there (torch_npu's fused optimizers refuse
``set_to_none=True``); and so does every call where a file imports a library of ``refuses``
(``import accelerate``: its prepared optimizers call ``zero_grad(set_to_none=True)``), and every
call where a file assigns None or False to an attribute of ``refuses`` (``.requires_grad =
False``: a fused optimizer combines the parameters that have a gradient at its first step, once),
or anything, for ``= *`` (``.grad = *``: a gradient set to None or to a new tensor, such as
improved-diffusion's fp16 master gradients, is no longer the one the optimizer combined and
reads), or calls a method of it with that value (``requires_grad_(False)``), and every call
where a file calls a module's method of ``refuses`` (``module.zero_grad()``: its receiver names no
optimizer, ``model.zero_grad()``) without ``set_to_none=False``, which from torch 2.0 sets the
gradients to None as well. Only calls change: a subclass or an ``isinstance`` of
``old_name`` keeps its meaning.

Like every rule of rules/optimize, each says in ``optimization`` what kind of optimization it is
and how sure the result is to equal the original: ``category``, ``equivalence`` (``exact``: the
same numbers by construction; ``tolerance``: the same algorithm, numbers within rounding;
``behaviour``: changes what training does, applied only when asked for by ``--optimize=all`` or by
id) and ``doc`` (the document it comes from).

    rules:
      OptimizeCallRule:
        - id: G2N2001
          old_name: torch.optim.SGD
          new_name: torch_npu.optim.NpuFusedSGD
          positional: 6
          keywords: [params, lr, momentum, dampening, weight_decay, nesterov]
          needs: [lr]
          optimization: {category: fused optimizer, equivalence: tolerance, doc: ...}
          tip: ...
"""

from __future__ import annotations

import re

import libcst as cst

from gpu2npu.rules.index import REFUSED_IMPORT, REFUSED_MODULE
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, dotted_name, is_expression, name_subject
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import append_keyword, delete_argument, keyword_index, passed_parameters
from gpu2npu.source.names import dotted_expression

REFUSED = re.compile(
    rf"^(?:[A-Za-z_]\w*\([A-Za-z_]\w*\)|{REFUSED_IMPORT}[A-Za-z_][\w.]*|\.[A-Za-z_]\w* = (?:None|False|\*)"
    rf"|{re.escape(REFUSED_MODULE)}[A-Za-z_]\w*\(\))$"
)


class OptimizeCall(RuleKind):
    name = "OptimizeCallRule"
    fields = {
        "old_name": Field(str, required=True, dotted=True, help="qualified name of what is called"),
        "new_name": Field(str, required=True, dotted=True, help="qualified name of its NPU implementation"),
        "positional": Field(int, required=True, help="positional arguments new_name takes"),
        "keywords": Field(list, required=True, help="new_name's parameters, in order"),
        "needs": Field(list, default=(), help="parameters the call must pass (no default in new_name)"),
        "fixed": Field(
            dict, default=None, help="old_name's parameters new_name lacks -> the value it acts as"
        ),
        "defaults": Field(
            dict, default=None, help="parameter -> old_name's default, where new_name's differs"
        ),
        "refuses": Field(
            list,
            default=(),
            help="method(keyword) calls new_name raises on unless the keyword is False, 'method(False)' "
            "for a call given False, 'import module' for a library that makes them itself, "
            "'.attribute = None' (or False), or 'module.method()' for a module's call",
        ),
        "tip": Field(str, required=True, help="what to do where a call keeps old_name"),
    }

    def validate(self, fields):
        problem = check_names(old_name=fields["old_name"], new_name=fields["new_name"])
        if problem:
            return problem
        if fields["positional"] < 0 or any(not isinstance(k, str) for k in fields["keywords"]):
            return "'positional' must be a count and 'keywords' names"
        if not set(fields["needs"]) | set(fields["defaults"] or ()) <= set(fields["keywords"]):
            return "'needs' and 'defaults' must name parameters of 'keywords'"
        if set(fields["fixed"] or ()) & set(fields["keywords"]):
            return "'fixed' names parameters new_name lacks, not parameters of 'keywords'"
        if not all(isinstance(call, str) and REFUSED.match(call) for call in fields["refuses"]):
            return (
                "'refuses' must list method(keyword) calls, such as zero_grad(set_to_none), "
                "'import module', such as 'import accelerate', '.attribute = None' (or False, or * for "
                "any value), such as '.grad = *', "
                "or 'module.method()', such as 'module.zero_grad()'"
            )
        values = [*(fields["fixed"] or {}).values(), *(fields["defaults"] or {}).values()]
        if not all(isinstance(value, str) and is_expression(value) for value in values):
            return "the values of 'fixed' and 'defaults' must be Python expressions (source text)"
        return None

    def compile(self, rule, index):
        index.add_call_edit(rule["old_name"], rule, self.apply)
        index.refused_calls.update(rule["refuses"])
        index.replaced_apis.add(rule["old_name"])  # replaced, or kept with this rule's row

    def trigger_names(self, rule):
        return dotted_name(rule["old_name"])

    def describe(self, rule):
        return f"{rule['old_name']}(...) -> {rule['new_name']}(...)"

    def subject(self, rule):
        return name_subject(rule["old_name"])

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        new = _without_fixed(call, rule["fixed"] or {}, ctx)
        refused = set(rule["refuses"]) & ctx.project.refused_calls
        if refused or new is None or not fits(new, rule["positional"], rule["keywords"], rule["needs"]):
            ctx.keep(rule["old_name"], rule.id)
            return call
        passed = passed_parameters(new, rule["keywords"])
        for name, value in (rule["defaults"] or {}).items():
            if name not in passed:
                new = append_keyword(new, name, cst.parse_expression(value))
        ctx.absolute_name_used(rule["new_name"].split(".")[0])
        what = f"change call {rule['old_name']} to {rule['new_name']}"
        ctx.record("MODIFY", what, rule.id)
        return new.with_changes(func=dotted_expression(rule["new_name"]))


def _without_fixed(call: cst.Call, fixed, ctx):
    """``call`` less the keywords of ``fixed`` it passes with their fixed value; None where it
    passes one with another value (the new callee cannot do that)."""
    for name, value in fixed.items():
        at = keyword_index(call, name)
        if at is None:
            continue
        if ctx.code(call.args[at].value) != value:
            return None
        call = delete_argument(call, at)
    return call


def fits(call: cst.Call, positional: int, keywords, needs) -> bool:
    """Whether the call passes only what the new callee takes, and all it needs."""
    given = passed_parameters(call, keywords)
    if given is None:
        return False
    passed = sum(1 for arg in call.args if arg.keyword is None)
    return passed <= positional and given <= set(keywords) and set(needs) <= given
