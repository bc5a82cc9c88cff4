"""InsertDeviceIdRule: the device index from the environment (msFmkTransplt's ``-s``).

Its statements bind ``name`` (``DEVICE_ID``) and select that device; they are put once into
each module whose migrated code uses the name (the DeviceId* kinds write it) and into each entry
script, after the module's leading imports, with the imports they need where the module lacks
them; ``entry_statements`` follow in entry scripts only (distributed: the process group), and so
do ``select_statements`` (-s: ``set_device(DEVICE_ID)``), unless the script selects its device
itself: it calls ``set_device`` with something else (a rank: torchrun's workers) or sets the
visible devices in Python (FastChat's ``--gpus``), which a device selected at import would
precede and void. There ``select_when_set`` go instead (-s: ``set_device(DEVICE_ID)`` where
``DEVICE_ID`` is set): nanoGPT selects its card only under torchrun, so a single-card run
started with ``DEVICE_ID=1`` would take card 0. A module that already binds the name with the
block's statement is left alone (a second migration adds nothing); one that binds it otherwise
(ChatGLM's ``DEVICE_ID = "0"``) gets the block under the name with ``_`` appended.

    rules:
      InsertDeviceIdRule:
        - id: G2N720
          name: DEVICE_ID
          imports: [os, torch_npu]
          statements:
            - "DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0"
            - "torch_npu.npu.set_device(DEVICE_ID)"
"""

import ast

from gpu2npu.rules.index import DeviceBlock
from gpu2npu.rules.kind import RuleKind
from gpu2npu.rules.kinds._common import check_names, is_identifier, listed_names, shortened
from gpu2npu.rules.model import Field


class InsertDeviceId(RuleKind):
    name = "InsertDeviceIdRule"
    fields = {
        "name": Field(str, required=True, help="the name the statements bind to the device index"),
        "imports": Field(list, default=[], help="modules the statements use"),
        "statements": Field(list, required=True, help="Python statements, one per item"),
        "device_type": Field(str, default="npu", help="device type of the strings naming the index"),
        "entry_statements": Field(list, default=[], help="statements that follow in entry scripts only"),
        "select_statements": Field(
            list, default=[], help="entry scripts only, unless the script selects its device itself"
        ),
        "select_when_set": Field(
            list,
            default=[],
            help="instead, in entry scripts that select their device themselves: statements that "
            "select it only where the environment names one",
        ),
        "selected_by": Field(
            list,
            default=[],
            help="calls of frameworks that select the device themselves (accelerate.Accelerator): "
            "a script making one selects its device itself",
        ),
    }
    text_only = True

    def validate(self, fields):
        if not is_identifier(fields["name"]) or not is_identifier(fields["device_type"]):
            return "'name' and 'device_type' must be Python identifiers (DEVICE_ID, npu)"
        problem = check_names(
            **listed_names("imports", fields["imports"]), **listed_names("selected_by", fields["selected_by"])
        )
        if problem:
            return problem
        lines = (
            fields["statements"]
            + fields["entry_statements"]
            + fields["select_statements"]
            + fields["select_when_set"]
        )
        if any(not isinstance(line, str) or "\n" in line for line in lines):
            return "each item of the statement lists must be one line of text"
        code = "\n".join(lines)
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return f"'statements' are not Python statements: {shortened(code)}"
        if fields["name"] not in _bound_names(tree):
            return f"'statements' must assign {fields['name']}"
        return None

    def compile(self, rule, index):
        index.device_block = DeviceBlock(
            rule["name"],
            tuple(rule["imports"]),
            tuple(rule["statements"]),
            rule["device_type"],
            rule.id,
            tuple(rule["entry_statements"]),
            tuple(rule["select_statements"]),
            tuple(rule["select_when_set"]),
            frozenset(rule["selected_by"]),
        )

    def describe(self, rule):
        return f"bind {rule['name']} from the environment after the imports of the modules that use it"


def _bound_names(tree: ast.Module) -> set:
    return {
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
