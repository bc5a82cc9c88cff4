"""RankZeroRule, for ``distributed -m MAIN``: in the main script, a statement that only logs or
saves (a call of ``calls``, of a function or method whose name starts with one of ``prefixes``,
such as ``save_checkpoint``, or of ``logger_methods`` on a receiver whose name says log, such as
``logger.info``) runs on one process: ``if <test>:``. Only where its arguments call nothing but
``argument_calls`` (``format``, ``item``, ``state_dict``): a statement that also computes, such as
``print(evaluate(model))``, may run collective operations that every process must join. Statements under
an ``if`` that already tests the rank are left alone. The pass is gpu2npu.rewrite.distributed.

    rules:
      RankZeroRule:
        - id: G2N743
          test: "torch.distributed.get_rank() == 0"
          calls: [builtins.print, torch.save]
          prefixes: [save]
"""

from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_expression, is_identifier, listed_names, shortened
from gpu2npu.rules.model import Field


class RankZero(RuleKind):
    name = "RankZeroRule"
    fields = {
        "test": Field(str, required=True, help="the test of rank 0"),
        "calls": Field(list, default=[], help="qualified calls run on rank 0 only"),
        "prefixes": Field(list, default=[], help="function or method names starting so run on rank 0 only"),
        "logger_methods": Field(
            list, default=[], help="methods run on rank 0 only on a receiver named *log*"
        ),
        "argument_calls": Field(
            list, default=[], help="the only calls its arguments may make (others may be collective)"
        ),
    }
    text_only = True

    def validate(self, fields):
        if not is_expression(fields["test"]):
            return f"'test' is not a Python expression: {shortened(fields['test'])}"
        names = fields["prefixes"] + fields["logger_methods"] + fields["argument_calls"]
        if any(not is_identifier(str(name)) for name in names):
            return "'prefixes' and 'logger_methods' must be names (save, info)"
        return check_names(**listed_names("calls", fields["calls"]))

    def compile(self, rule, index):
        plan = index.distributed_plan()
        plan.guard_test = rule["test"]
        plan.guarded_calls = frozenset(rule["calls"])
        plan.guarded_prefixes = tuple(rule["prefixes"])
        plan.logger_methods = frozenset(rule["logger_methods"])
        plan.argument_calls = frozenset(rule["argument_calls"])
        plan.guard_rule = rule.id

    def describe(self, rule):
        return f"main script: logging and saving under 'if {rule['test']}:'"
