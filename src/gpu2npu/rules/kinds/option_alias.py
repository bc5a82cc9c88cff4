"""OptionAliasRule: a command-line option a launcher of the target torch spells differently gets
that spelling as an alias where the project declares it (``parser.add_argument('--local_rank',
...)`` -> ``parser.add_argument('--local_rank', '--local-rank', ...)``: from torch 2.0,
``torch.distributed.launch`` passes ``--local-rank``). argparse names the value after the first
long option, so ``args.local_rank`` reads the same value under either spelling. A call that
declares the alias already, or declares the option through a name, is left alone.

    rules:
      OptionAliasRule:
        - {id: G2N176, method: add_argument, option: --local_rank, alias: --local-rank}
"""

from __future__ import annotations

import libcst as cst

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import is_identifier
from gpu2npu.rules.model import Field


class OptionAlias(RuleKind):
    name = "OptionAliasRule"
    fields = {
        "method": Field(str, required=True, help="the method declaring options, on any receiver"),
        "option": Field(str, required=True, help="the option as the project spells it"),
        "alias": Field(str, required=True, help="the spelling the launcher passes"),
    }

    def validate(self, fields):
        if not is_identifier(fields["method"]):
            return f"'method' must be a method name without dots, not {fields['method']!r}"
        if not all(fields[key].startswith("-") for key in ("option", "alias")):
            return "'option' and 'alias' must be command-line options (starting with '-')"
        return None

    def compile(self, rule, index):
        index.add_call_edit("." + rule["method"], rule, self.apply)

    def trigger_words(self, rule):
        return {rule["option"]}

    def describe(self, rule):
        return f".{rule['method']}('{rule['option']}', ...) also accepts {rule['alias']}"

    def apply(self, rule, call: cst.Call, ctx) -> cst.Call:
        options = [
            arg.value.evaluated_value
            if arg.keyword is None and isinstance(arg.value, cst.SimpleString)
            else None
            for arg in call.args
        ]
        if rule["option"] not in options or rule["alias"] in options:
            return call
        position = options.index(rule["option"])
        alias = cst.Arg(cst.SimpleString(repr(rule["alias"])), comma=call.args[position].comma)
        declared = call.args[position].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        args = [*call.args[:position], declared, alias, *call.args[position + 1 :]]
        ctx.record("MODIFY", f"accept {rule['alias']} as {rule['option']} in {rule['method']}", rule.id)
        return call.with_changes(args=args)
