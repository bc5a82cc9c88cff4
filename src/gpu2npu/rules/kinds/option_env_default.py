"""OptionEnvDefaultRule: an option the launcher no longer passes takes its default from the
environment variable that launcher sets instead. The distributed mode starts the main script with
torchrun, which sets ``LOCAL_RANK`` and passes no ``--local-rank`` (torch.distributed.launch's
deprecation note says to read the variable), so a script that reads its card only from
``--local_rank`` put every rank on card 0, or trained one copy per process (ScaledYOLOv4):

    parser.add_argument('--local_rank', type=int, default=-1)
    -> parser.add_argument('--local_rank', type=int, default=int(os.environ.get('LOCAL_RANK', -1)))

A launcher that passes the option still wins over the default. Only a default written as an
integer literal, or none with ``type=int`` (argparse converts a string default through its type),
is rewritten; any other default is kept and reported with the rule's tip.

    rules:
      OptionEnvDefaultRule:
        - {id: G2N744, method: add_argument, options: [--local_rank, --local-rank], variable: LOCAL_RANK,
           tip: "..."}
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import is_identifier
from gpu2npu.rules.model import Field
from gpu2npu.source.arguments import append_keyword


class OptionEnvDefault(RuleKind):
    name = "OptionEnvDefaultRule"
    fields = {
        "method": Field(str, required=True, help="the method declaring options, on any receiver"),
        "options": Field(list, required=True, help="the option's spellings"),
        "variable": Field(str, required=True, help="the environment variable the launcher sets"),
        "tip": Field(str, required=True, help="what to do where the default is kept"),
    }

    def validate(self, fields):
        if not is_identifier(fields["method"]):
            return f"'method' must be a method name without dots, not {fields['method']!r}"
        if not fields["options"] or not all(
            isinstance(option, str) and option.startswith("-") for option in fields["options"]
        ):
            return "'options' must list command-line options (starting with '-')"
        if not is_identifier(fields["variable"]):
            return f"'variable' must be an environment variable's name, not {fields['variable']!r}"
        return None

    def compile(self, rule, index):
        index.add_call_edit("." + rule["method"], rule, self.apply)

    def trigger_words(self, rule):
        return set(rule["options"])

    def describe(self, rule):
        return f".{rule['method']}('{rule['options'][0]}', default=...) reads {rule['variable']} first"

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        option = _declared(call, rule["options"])
        if option is None:
            return call
        variable = rule["variable"]
        if variable in ctx.code(call):  # it reads the variable already
            return call
        default = _keyword(call, "default")
        value = _env_default(default, _keyword(call, "type"), variable)
        if value is None:
            ctx.keep(option, rule.id, works=False)
            return call
        ctx.absolute_name_used("os")
        ctx.record("MODIFY", f"take the default of {option} from the launcher's {variable}", rule.id)
        if default is None:
            return append_keyword(call, "default", value)
        args = [arg.with_changes(value=value) if arg is default else arg for arg in call.args]
        return call.with_changes(args=args)


def _declared(call: cst.Call, options) -> Optional[str]:
    """The first of ``options`` the call declares as a plain string, or None."""
    declared = [
        arg.value.evaluated_value
        for arg in call.args
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString)
    ]
    return next((option for option in declared if option in options), None)


def _keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)


def _env_default(default: Optional[cst.Arg], kind: Optional[cst.Arg], variable: str):
    """The new default: the variable read as an int falling back on the literal written, or the
    variable as a string where argparse's ``type=int`` converts it; None where neither holds."""
    if default is None:
        if kind is not None and isinstance(kind.value, cst.Name) and kind.value.value == "int":
            return cst.parse_expression(f"os.environ.get({variable!r})")
        return None
    value = default.value
    signed = isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus))
    if not isinstance(value.expression if signed else value, cst.Integer):
        return None
    literal = cst.Module([]).code_for_node(value)
    return cst.parse_expression(f"int(os.environ.get({variable!r}, {literal}))")
