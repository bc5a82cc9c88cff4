"""BindNamesRule: names a target's rewrites write instead of CUDA (``DEVICE_TYPE`` for ``'cuda'``,
``DEVICE_MODULE`` for ``torch.cuda``), each bound once per module by one statement. The pass puts
the statements of the names a module uses (and of the names those statements use), in the order
given, after the module's leading imports, with ``import torch`` where the module lacks it. A
module whose text already holds the word gets the name with a ``_`` appended (``DEVICE_TYPE_``),
so no binding of the project is shadowed.

    rules:
      BindNamesRule:
        - id: G2N900
          bindings:
            ACCELERATOR: "ACCELERATOR = 'cuda' if torch.cuda.is_available() else None"
            DEVICE_TYPE: "DEVICE_TYPE = ACCELERATOR or 'cpu'"
"""

import ast

from gpu2npu.rules.index import Binding
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import is_identifier, shortened
from gpu2npu.rules.model import Field


class BindNames(RuleKind):
    name = "BindNamesRule"
    fields = {
        "bindings": Field(dict, required=True, help="name -> the module-level statement(s) that bind it"),
    }

    def validate(self, fields):
        for name, code in fields["bindings"].items():
            if not isinstance(name, str) or not is_identifier(name):
                return f"'bindings' keys must be Python identifiers, not {shortened(name)}"
            if not isinstance(code, str):
                return f"the statement of {name} must be text, not {shortened(code)}"
            try:
                tree = ast.parse(code)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return f"the statement of {name} is not Python: {shortened(code)}"
            if name not in _assigned(tree):
                return f"the statement of {name} must assign {name} at module level"
        return None

    def compile(self, rule, index):
        for name, code in rule["bindings"].items():
            index.bindings[name] = Binding(name, code.rstrip("\n"), rule.id)

    def describe(self, rule):
        return f"bind {', '.join(rule['bindings'])} once in each module that uses them"


def _assigned(tree: ast.Module) -> set:
    return {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
