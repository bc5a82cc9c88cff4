"""KeywordSetRule: a call of ``func_name`` that does not pass
``keyword`` gets ``keyword=value`` (``amp.initialize(..., combine_grad=True)``,
``DataLoader(..., drop_last=True)``). A call that passes it already, by keyword or by position
(``parameters`` lists the callee's parameters in order), keeps the caller's choice; so does one
that passes a parameter of ``not_with`` (``batch_sampler`` excludes ``drop_last``) or a parameter
of ``not_none`` as a literal ``None`` (``batch_size=None`` switches batching off), and one that
does not pass every parameter of ``only_with``, or passes one as a literal ``False`` or ``None``
(``pin_memory_device`` only where ``pin_memory`` is on), and one whose parameter of ``only_on``
is not on as written: ``True`` or an expression such as ``train_sampler is None``, not a bare
variable (``shuffle=shuffle`` in a validation loader's function, whose default is False), and one
where a word of the call, of the line it starts on or of what the file assigns to its first
argument begins with a word of ``not_named`` (``val_loader = DataLoader(...)``, open_clip's
``dataset = ImageFolder(args.imagenet_val)`` then ``DataLoader(dataset, shuffle=True)``: an
evaluation loader that shuffles only to subsample). A call
with ``*args`` or ``**kwargs`` may pass it unseen: it is kept and reported with the rule's tip.
The names a target binds (BindNamesRule: ``DEVICE_TYPE``) in ``value`` are bound in the module
and spelled as there (``torch.amp.GradScaler()`` -> ``torch.amp.GradScaler(device=DEVICE_TYPE)``,
``device_type=ACCELERATOR or 'cuda'``).
``aliases``: other qualified names of the callee (``torch.utils.data.dataloader.DataLoader``).

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

import re

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import assigned_values, check_names, is_expression, name_subject
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import append_keyword, find_argument, passed_parameters

_WORD = re.compile(r"\b[A-Za-z_]\w*\b")

_OFF = ("False", "None")


class KeywordSet(RuleKind):
    name = "KeywordSetRule"
    fields = {
        "func_name": Field(str, required=True, dotted=True, help="qualified name of the callee"),
        "aliases": Field(
            list,
            default=(),
            help="other qualified names of the callee (torch.utils.data.dataloader.DataLoader)",
        ),
        "keyword": Field(str, required=True, help="the parameter to pass"),
        "value": Field(str, required=True, help="its value, as source text"),
        "parameters": Field(list, required=True, help="the callee's parameters, in order"),
        "not_with": Field(list, default=(), help="parameters that exclude passing keyword"),
        "not_none": Field(list, default=(), help="parameters that, passed as None, exclude passing keyword"),
        "only_with": Field(list, default=(), help="parameters the call must pass, not False or None"),
        "only_on": Field(
            list,
            default=(),
            help="parameters the call must pass as True or an expression, not a bare variable",
        ),
        "not_named": Field(
            list,
            default=(),
            help="words that, beginning a word of the call or of its line, leave the call as it is (val)",
        ),
        "tip": Field(str, required=True, help="what to do where a call is kept"),
    }

    def validate(self, fields):
        problem = check_names(func_name=fields["func_name"], keyword=fields["keyword"])
        for alias in fields["aliases"]:
            problem = problem or check_names(aliases=str(alias))
        if problem:
            return problem
        if not is_expression(fields["value"]):
            return f"'value' must be a Python expression, not {fields['value']!r}"
        lists = ("not_with", "not_none", "only_with", "only_on")
        named = {fields["keyword"]}.union(*(fields[key] for key in lists))
        if not named <= set(fields["parameters"]):
            return (
                "'parameters' must name 'keyword' and every parameter of 'not_with', 'not_none', "
                "'only_with' and 'only_on'"
            )
        return None

    def compile(self, rule, index):
        for name in [rule["func_name"], *rule["aliases"]]:
            index.add_call_edit(name, rule, self.apply)
            # projects re-export what they call (dinov2.fsdp's ShardedGradScaler, yolov5's autocast)
            index.reexported_edits.setdefault(name, []).append(index.calls[name][-1])

    def trigger_words(self, rule):
        """The callee's own name: every call spells it (``GradScaler(``, an import of it), while
        the segment under the root (``amp``, ``distributed``) would send most files to the tree."""
        return {rule["func_name"].rsplit(".", 1)[-1]}

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
        if any(_passed_as(call, rule["parameters"], name, ("None",)) for name in rule["not_none"]):
            return call
        if not all(_passes_switched_on(call, rule["parameters"], name) for name in rule["only_with"]):
            return call
        if not all(_passes_on_as_written(call, rule["parameters"], name) for name in rule["only_on"]):
            return call
        if rule["not_named"] and _named(_names_of(call, ctx), rule["not_named"]):
            return call
        value = _spelled_here(rule["value"], ctx)
        ctx.record("MODIFY", f"pass {rule['keyword']}={value} to {rule['func_name']}", rule.id)
        return append_keyword(call, rule["keyword"], cst.parse_expression(value))


def _names_of(call: cst.Call, ctx) -> str:
    """The call, the line it starts on, and the values the file assigns to its first argument
    where that is a name (the dataset of a loader)."""
    texts = [ctx.code(call), ctx.line_text()]
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    if isinstance(first, cst.Name):
        texts += assigned_values(ctx.source, first.value)
    return " ".join(texts)


def _named(text: str, words) -> bool:
    """Whether a word of ``text`` (split at anything but letters and digits) begins with one of
    ``words``: ``imagenet_val`` and ``validation`` with ``val``; ``interval`` not."""
    return any(part.startswith(tuple(words)) for part in re.split(r"[^a-z0-9]+", text.lower()))


def _spelled_here(value: str, ctx) -> str:
    """The value with each name a target binds spelled as this module binds it."""
    bound = {name for name in _WORD.findall(value) if name in ctx.index.bindings}
    if not bound:
        return value
    return _WORD.sub(lambda word: ctx.bound_name(word[0]) if word[0] in bound else word[0], value)


def _passes_switched_on(call: cst.Call, parameters, name: str) -> bool:
    """Whether ``call`` passes ``name`` with a value other than a literal False or None."""
    index = find_argument(call, parameters.index(name), name)
    return index is not None and not _passed_as(call, parameters, name, _OFF)


def _passes_on_as_written(call: cst.Call, parameters, name: str) -> bool:
    """Whether ``call`` passes ``name`` as ``True`` or as an expression that computes it, not as a
    bare name or attribute, whose value this call does not show."""
    index = find_argument(call, parameters.index(name), name)
    if index is None:
        return False
    value = call.args[index].value
    if isinstance(value, cst.Name):
        return value.value == "True"
    return not isinstance(value, cst.Attribute)


def _passed_as(call: cst.Call, parameters, name: str, literals) -> bool:
    """Whether ``call`` passes ``name`` as one of the ``literals`` (False, None)."""
    index = find_argument(call, parameters.index(name), name)
    if index is None:
        return False
    value = call.args[index].value
    return isinstance(value, cst.Name) and value.value in literals
