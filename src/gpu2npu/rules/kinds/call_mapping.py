"""CallMappingRule (``migrate --optimize``): a call of a CUDA-only function written as a call of
its NPU counterpart, argument by argument (flash-attn's ``flash_attn_func`` ->
``torch_npu.npu_fusion_attention``). The mapping is data:

* ``parameters``: the old callee's parameters a call may pass by position, in order, and
  ``defaults``: the default of each parameter that has one (keyword-only ones too);
* ``unmapped``: parameters the new callee has no counterpart for: a call may pass them only with
  their default (they are dropped);
* ``arguments``: the new call, in order. A string is a positional argument, a template whose
  ``{name}`` placeholders are the arguments passed for those parameters (``{q}.shape[2]``). A
  mapping ``{keyword, value}`` is a keyword argument, left out where every parameter its value
  reads is not passed or passed as its default, unless it says otherwise: ``if: P`` writes it where
  P is true (``value if P else <else>`` where P is a name); ``if_none: TEXT`` writes TEXT where the
  parameter it reads is None or not passed (``value if P is not None else TEXT`` for a name);
* ``item``: which item of the new callee's result the old callee returns (``[0]``);
* ``drop_import``: the import of the old function goes where the rewrite leaves it unused (a
  package that cannot be installed on the NPU machine would fail it).

A call that passes anything else (``*args``, another value of an unmapped parameter, a parameter
read twice that is not a name or a literal, a comment between its arguments) keeps the old
function and is reported with the rule's tip as unsupported.

    rules:
      CallMappingRule:
        - id: G2N2040
          func_names: [flash_attn.flash_attn_func]
          new_name: torch_npu.npu_fusion_attention
          parameters: [q, k, v, dropout_p, softmax_scale, causal]
          defaults: {dropout_p: "0.0", softmax_scale: "None", causal: "False", window_size: "(-1, -1)"}
          unmapped: [window_size]
          arguments: ["{q}", "{k}", "{v}", "{q}.shape[2]", "'BSND'",
                      {keyword: scale, value: "{softmax_scale}", if_none: "{q}.shape[-1] ** -0.5"}]
          item: 0
"""

from __future__ import annotations

from typing import Dict, Optional

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_expression, is_identifier, listed_names
from gpu2npu.rules.model import Field
from gpu2npu.source.names import dotted_expression
from gpu2npu.source.templates import fill, is_plain, literal, placeholders, template_code

_ARGUMENT_FIELDS = {"keyword", "value", "if", "else", "if_none"}
_LONG = 100  # a rewritten call longer than this gets one argument per line


class CallMapping(RuleKind):
    name = "CallMappingRule"
    fields = {
        "func_names": Field(list, required=True, help="qualified names of the old function"),
        "new_name": Field(str, required=True, dotted=True, help="qualified name of the new function"),
        "parameters": Field(list, required=True, help="the old function's positional parameters, in order"),
        "defaults": Field(
            dict, default=None, help="parameter -> its default in the old function (source text)"
        ),
        "unmapped": Field(list, default=(), help="parameters a call may pass only with their default"),
        "arguments": Field(
            list, required=True, help="the new call's arguments: templates or {keyword, value}"
        ),
        "item": Field(int, default=None, help="the item of the new function's result the old one returns"),
        "drop_import": Field(bool, default=False, help="remove the old function's import once unused"),
        "tip": Field(str, required=True, help="what to do where a call keeps the old function"),
    }

    def validate(self, fields):
        problem = check_names(new_name=fields["new_name"], **listed_names("func_names", fields["func_names"]))
        if problem:
            return problem
        defaults = fields["defaults"] or {}
        names = [*fields["parameters"], *defaults, *fields["unmapped"]]
        if not all(isinstance(name, str) and is_identifier(name) for name in names):
            return "'parameters', 'unmapped' and the keys of 'defaults' must be parameter names"
        if fields["item"] is not None and fields["item"] < 0:
            return "'item' must be an index (0 or more)"
        known = set(fields["parameters"]) | set(defaults)
        if not set(fields["unmapped"]) <= set(defaults):
            return "'unmapped' must name parameters that have a default in 'defaults'"
        if not all(isinstance(value, str) and is_expression(value) for value in defaults.values()):
            return "the values of 'defaults' must be Python expressions (source text)"
        for argument in fields["arguments"]:
            problem = _argument_problem(argument, known)
            if problem:
                return problem
        return None

    def compile(self, rule, index):
        for func_name in rule["func_names"]:
            index.add_call_edit(func_name, rule, self.apply)
            if rule["drop_import"]:
                index.droppable_imports[func_name] = rule.id

    def trigger_names(self, rule):
        return set(rule["func_names"])

    def describe(self, rule):
        return f"{', '.join(rule['func_names'])}(...) -> {rule['new_name']}(...)"

    def subject(self, rule):
        return rule["func_names"][0]

    def apply(self, rule, call: cst.Call, ctx) -> cst.BaseExpression:
        name = ctx.qualified_name(call.func) or rule["func_names"][0]
        passed = _passed(call, rule, ctx)
        new_args = _new_arguments(rule, passed, ctx) if passed is not None else None
        if new_args is None or _has_comment_between_arguments(call):
            ctx.keep(name, rule.id, works=False)
            return call
        ctx.absolute_name_used(rule["new_name"].split(".")[0])
        ctx.record("MODIFY", f"change call {name} to {rule['new_name']}", rule.id)
        new = _laid_out(new_args, call.with_changes(func=dotted_expression(rule["new_name"])), ctx)
        if rule["item"] is None:
            return new
        index = cst.SubscriptElement(cst.Index(cst.Integer(str(rule["item"]))))
        return cst.Subscript(value=new, slice=[index])


def _argument_problem(argument, known) -> Optional[str]:
    if isinstance(argument, str):
        template, reads = argument, placeholders(argument)
    elif isinstance(argument, dict) and isinstance(argument.get("keyword"), str) and "value" in argument:
        if not set(argument) <= _ARGUMENT_FIELDS:
            return f"an argument mapping takes only {', '.join(sorted(_ARGUMENT_FIELDS))}: {argument!r}"
        template = argument["value"]
        texts = [argument.get("else"), argument.get("if_none")]
        if not all(
            text is None or isinstance(text, str) and is_expression(template_code(text)) for text in texts
        ):
            return f"'else' and 'if_none' must be Python expressions: {argument!r}"
        reads = placeholders(str(template)) + placeholders(str(argument.get("if_none") or ""))
        if argument.get("if") is not None:
            reads.append(argument["if"])
    else:
        return f"each of 'arguments' is a template (text) or {{keyword, value}}, not {argument!r}"
    if not isinstance(template, str) or not is_expression(template_code(template)):
        return f"an argument must be a Python expression with {{parameter}} placeholders: {template!r}"
    unknown = [name for name in reads if name not in known]
    return f"the arguments read unknown parameters: {', '.join(unknown)}" if unknown else None


def _passed(call: cst.Call, rule, ctx) -> Optional[Dict[str, Optional[cst.BaseExpression]]]:
    """Parameter -> the value the call passes for it (None: left to its default); None where the
    call passes what the mapping cannot take."""
    parameters, defaults = rule["parameters"], rule["defaults"] or {}
    passed: Dict[str, Optional[cst.BaseExpression]] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if position >= len(parameters):
                return None
            name, position = parameters[position], position + 1
        else:
            name = arg.keyword.value
        if name in passed or name not in set(parameters) | set(defaults):
            return None
        passed[name] = None if _is_default(arg.value, defaults.get(name), ctx) else arg.value
    if any(passed.get(name) is not None for name in rule["unmapped"]):
        return None
    if any(name not in passed and name not in defaults for name in parameters):
        return None  # a required argument is missing: the call fails on CUDA too
    return passed


def _is_default(value: cst.BaseExpression, default: Optional[str], ctx) -> bool:
    """Whether ``value`` is written as the literal ``default`` (``0`` for ``0.0``, not ``False``)."""
    if default is None:
        return False
    is_literal, found = literal(value, ctx.code(value))
    known, expected = literal(cst.parse_expression(default), default)
    if not (is_literal and known) or isinstance(found, bool) != isinstance(expected, bool):
        return False
    return found == expected


def _new_arguments(rule, passed, ctx):
    """The new call's arguments (without layout), or None where the call cannot be mapped."""
    defaults = rule["defaults"] or {}
    values = {name: value for name, value in passed.items() if value is not None}
    for name, default in defaults.items():
        values.setdefault(name, cst.parse_expression(default))
    args, reads = [], []
    for argument in rule["arguments"]:
        if isinstance(argument, str):
            args.append(cst.Arg(fill(argument, values)))
            reads += placeholders(argument)
            continue
        text = _keyword_value(argument, passed)
        if text is None:
            continue
        if text is False:
            return None
        args.append(_keyword(argument["keyword"], fill(text, values)))
        reads += placeholders(text)
    twice = {name for name in reads if reads.count(name) > 1}
    if any(name in passed and passed[name] is not None and not is_plain(passed[name]) for name in twice):
        return None
    return args


def _keyword_value(argument, passed):
    """The template of a keyword argument for this call; None: left out; False: cannot be written."""
    value, condition, if_none = argument["value"], argument.get("if"), argument.get("if_none")
    if condition is not None:
        given = passed.get(condition)
        if given is None or _literally(given, "False"):
            return None
        if _literally(given, "True"):
            return value
        if "else" not in argument or not is_plain(given):
            return False
        return f"{value} if {{{condition}}} else {argument['else']}"
    reads = placeholders(value)
    if if_none is not None:
        given = [passed.get(name) for name in reads]
        if all(node is None or _literally(node, "None") for node in given):
            return if_none
        if len(reads) == 1 and not _is_number(given[0]):
            if not is_plain(given[0]):
                return False
            return f"{value} if {{{reads[0]}}} is not None else {if_none}"
        return value
    return value if any(passed.get(name) is not None for name in reads) else None


def _is_number(node: Optional[cst.BaseExpression]) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _literally(node: cst.BaseExpression, constant: str) -> bool:
    return isinstance(node, cst.Name) and node.value == constant


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    equal = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    return cst.Arg(value, keyword=cst.Name(name), equal=equal)


def _laid_out(args, call: cst.Call, ctx):
    """The new arguments in the call's layout: one per line where its first argument has a line of
    its own (with the call's indentation and closing) or where one line would be long (indented
    from the call's line), else on one line."""
    before = call.whitespace_before_args
    if not isinstance(before, cst.ParenthesizedWhitespace):
        one_line = [
            arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for arg in args
        ]
        one_line[-1] = one_line[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        indentation = ctx.indentation()
        if len(indentation) + len(ctx.code(call.with_changes(args=one_line))) <= _LONG:
            return call.with_changes(args=one_line)
        before = _line_break(indentation + "    ")
        closing = cst.Comma(whitespace_after=_line_break(indentation))
        laid = [arg.with_changes(comma=cst.Comma(whitespace_after=before)) for arg in args[:-1]]
        return call.with_changes(
            whitespace_before_args=before, args=[*laid, args[-1].with_changes(comma=closing)]
        )
    last = call.args[-1]
    laid = [arg.with_changes(comma=cst.Comma(whitespace_after=before)) for arg in args[:-1]]
    laid.append(args[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=laid)


def _line_break(indentation: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(indent=False, last_line=cst.SimpleWhitespace(indentation))


def _has_comment_between_arguments(call: cst.Call) -> bool:
    """Whether a comment sits in the call's own whitespace (after a comma, before the first
    argument): rebuilding the argument list would lose it. Comments inside values stay."""
    spaces = [call.whitespace_before_args] + [
        arg.comma.whitespace_after for arg in call.args if isinstance(arg.comma, cst.Comma)
    ]
    spaces += [arg.whitespace_after_arg for arg in call.args]
    return any(isinstance(space, cst.ParenthesizedWhitespace) and _comments(space) for space in spaces)


def _comments(space: cst.ParenthesizedWhitespace) -> bool:
    lines = [space.first_line, *space.empty_lines]
    return any(getattr(line, "comment", None) is not None for line in lines)
