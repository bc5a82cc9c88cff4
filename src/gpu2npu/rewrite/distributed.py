"""Single card to multi-card (``migrate ... distributed -m MAIN -t MODEL``): a second pass over the
migrated main script only, after the rules of the full migration.

* the model ``MODEL`` is wrapped in DistributedDataParallel once, after the first statement that
  moves it to the device (after the whole ``if``/``with`` that holds it), and its ``state_dict`` /
  ``load_state_dict`` calls after that point go through ``.module`` (checkpoints keep their keys),
  also in the functions (defined where the wrap is) that read that binding and are called only
  after the wrap; one that may run before it is kept and reported;
  where the script puts ``MODEL`` in a DataParallel itself (``model = nn.DataParallel(model)``,
  not under a condition), the wrap takes its place instead: DDP has the same ``.module`` and
  checkpoint keys, so the script's other lines stay as written (RAFT reads ``model.module``);
* training ``DataLoader``s get a ``DistributedSampler`` that takes over their ``shuffle``, wherever
  the call is (assigned, returned, passed as an argument; positional ``shuffle`` too); a loader with
  its own ``sampler``/``batch_sampler``, ``**kwargs``, or a dataset expression that cannot be
  evaluated twice is kept and reported; evaluation loaders (no shuffle, no "train" in their names)
  stay unsharded unless asked (``--shard-eval``), so every process evaluates the whole set;
* ``for epoch in ...`` loops call ``sampler.set_epoch(epoch)`` first for the loaders in scope;
* logging and checkpoint saving (``print``, ``torch.save``, ``logging.*``, ``save*()``) run on rank 0.

A script that already sets up a process group or DDP, or hands itself to a framework that
distributes it (DeepSpeed, Lightning, Accelerate, FSDP: the rule's ``setups``), is left as it is,
and reported. Where a pattern is not recognised the code stays and a report row says what to do.
The process group itself is the InsertDeviceIdRule's ``entry_statements`` (rules/distributed/).
``find_model`` tells the service, before anything is written, whether MODEL is moved to the device
and which variables could be the model when it is not (moved, and their ``.parameters()`` passed
to a call such as an optimizer).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider, ScopeProvider

from gpu2npu.rewrite.changes import (
    INSERT,
    MODIFY,
    Change,
    Kept,
    changed_line,
    in_original_lines,
    kept_in_original_lines,
    original_lines,
)
from gpu2npu.rules.index import DistributedPlan
from gpu2npu.source.arguments import append_keyword
from gpu2npu.source.imports import file_imports, qualify
from gpu2npu.source.names import dotted

MOVES = frozenset({"npu", "cuda", "to"})
RANK_TESTS = ("rank", "main_process", "is_master", "master")
LOADER = "torch.utils.data.DataLoader"
MAIN_GUARD = re.compile(r"""^__name__\s*==\s*(['"])__main__\1$""")


@dataclass
class DistributedResult:
    new_code: str
    changes: List[Change]
    kept: List[Kept]
    already: bool = False  # the script sets up its own process group or DDP, or a framework does
    replaced: List[int] = field(default_factory=list)  # lines where the wrap replaced a DataParallel


@dataclass
class ModelSearch:
    """What the main script says of the model, before the migration (``find_model``)."""

    already: str  # the set-up call that distributes the script already ("" none)
    unmoved: List[str]  # the targets never moved to the device
    candidates: List[Tuple[str, int]]  # (variable, line of its first move): the variables moved to
    # the device whose .parameters() are passed to a call, by line
    built: Dict[str, Tuple[int, str]] = field(default_factory=dict)  # variable -> (line, function) of
    # its first binding by a call of a function outside torch (a factory that may move it)


def find_model(source: str, plan: DistributedPlan, targets: Sequence[str]) -> Optional[ModelSearch]:
    """Which of ``targets`` are never moved to the device in ``source``, the variables that could be
    a model (the same moves as the wrap looks for), and whether the script is distributed already
    (None: a source libcst cannot read)."""
    scan = _MoveScan(targets[0], plan)
    try:
        MetadataWrapper(cst.parse_module(source)).visit(scan)
    except (cst.ParserSyntaxError, RecursionError):
        return None
    candidates = sorted(
        ((name, line) for name, line in scan.moved.items() if name in scan.optimized), key=lambda c: c[1]
    )
    return ModelSearch(scan.setup, [t for t in targets if t not in scan.moved], candidates, scan.built)


def model_tip(plan: DistributedPlan, situation: str, model: str, setup: str = "") -> str:
    """A tip of the wrapper rule, its ``{model}`` and ``{setup}`` filled in."""
    return plan.tips[situation].format(model=model, setup=setup)


def wrappers_in_place(tree: ast.AST, plan: DistributedPlan, targets: Sequence[str]) -> Dict[int, str]:
    """Line -> model of the statements that put a model in a wrapper the wrap replaces
    (``model = nn.DataParallel(model)``, ``.cuda()`` after it or not), on no condition: in the
    body of the module, of a function or of the script's ``if __name__ == '__main__':``."""
    if not plan.replaces:
        return {}
    imports = file_imports(tree)
    found: Dict[int, str] = {}
    for statement in _unconditional_statements(tree):
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        name = statement.targets[0].id if isinstance(statement.targets[0], ast.Name) else ""
        value = statement.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MOVES:
            value = value.func.value  # DataParallel(model).cuda()
        if name in targets and isinstance(value, ast.Call) and _wraps_a_model(value):
            if qualify(dotted(value.func) or "", imports) in plan.replaces:
                found.setdefault(statement.lineno, name)
    return found


def _wraps_a_model(call: ast.Call) -> bool:
    """The model is its first argument or ``module=`` (not unpacked)."""
    first = call.args[0] if call.args else None
    return (first is not None and not isinstance(first, ast.Starred)) or any(
        keyword.arg == "module" for keyword in call.keywords
    )


def _unconditional_statements(tree: ast.AST):
    bodies = [tree.body] + [
        node.body for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    bodies += [
        node.body
        for node in tree.body
        if isinstance(node, ast.If) and MAIN_GUARD.match(ast.unparse(node.test)) is not None
    ]
    return [statement for body in bodies for statement in body]


def distribute(
    source: str,
    plan: DistributedPlan,
    target: str,
    shard_eval: bool,
    elsewhere: Tuple = (),
    in_place: Optional[Dict[int, str]] = None,
) -> DistributedResult:
    """The main script's code, made multi-card; ``target``: the model, or several separated by
    commas (a GAN's generator and discriminator), each wrapped on its own; ``elsewhere``: (line of
    the import, set-up) where a module the script imports sets up the process group or DDP;
    ``in_place``: line -> model where the wrap replaces the model's wrapper (``wrappers_in_place``
    of the original, in the lines of ``source``)."""
    first, *others = target.split(",")
    in_place = in_place or {}
    wrapper = MetadataWrapper(cst.parse_module(source))
    scan = _MoveScan(first, plan, in_place)
    wrapper.visit(scan)
    if scan.already or elsewhere:
        line, setup = (scan.already, scan.setup) if scan.already else elsewhere
        text = model_tip(plan, "already", first, setup)
        kept = [Kept(line, "distributed", line, "distributed", plan.wrapper_rule, True, tip=text)]
        return DistributedResult(source, [], kept, already=True)
    transformer = _Distribute(plan, first, shard_eval, scan)
    code = wrapper.visit(transformer).code
    transformer.report_leftovers()
    changes, kept = transformer.changes, transformer.kept
    replaced = [scan.in_place_line] if scan.in_place is not None else []
    for model in others:  # one more pass per model: its wrap and .module calls, nothing else
        before, after = source.encode("utf-8"), code.encode("utf-8")
        lines = {changed_line(before, after, line): name for line, name in in_place.items()}
        wrapped, more_changes, more_kept, more_replaced = _wrap_another(code, plan, model, lines)
        line_of = original_lines(before, after)
        changes += in_original_lines(more_changes, line_of)
        kept += kept_in_original_lines(more_kept, line_of)
        replaced += [line_of(line) for line in more_replaced]
        code = wrapped
    return DistributedResult(code, changes, kept, replaced=replaced)


def _wrap_another(code: str, plan: DistributedPlan, model: str, in_place: Dict[int, str]):
    """``model`` wrapped in ``code`` that is multi-card already (the first model's pass done): the
    new code, changes, kept code and the line of the wrapper it replaced (if any)."""
    wrapper = MetadataWrapper(cst.parse_module(code))
    scan = _MoveScan(model, plan, in_place)
    wrapper.visit(scan)
    transformer = _Distribute(plan, model, False, scan, wrap_only=True)
    new_code = wrapper.visit(transformer).code
    transformer.report_leftovers()
    replaced = [scan.in_place_line] if scan.in_place is not None else []
    return new_code, transformer.changes, transformer.kept, replaced


def has_training_loop(tree: ast.AST) -> bool:
    """A loop over epochs, or one that calls ``.backward()``, ``.step()`` or a train function
    (``train_one_epoch``, not ``from_pretrained``)."""
    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            continue
        if "epoch" in ast.unparse(loop.target if isinstance(loop, (ast.For, ast.AsyncFor)) else loop.test):
            return True
        for node in ast.walk(loop):
            if isinstance(node, ast.Call):
                name = (
                    node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                )
                if name in ("backward", "step") or _names_training(name):
                    return True
    return False


def _names_training(name: str) -> bool:
    """``train``, ``train_epoch``, ``run_training``, ``pretrain_step``: a word of the name, not a
    part of one, nor a model trained already (``from_pretrained``, ``constrain``)."""
    words = (word[3:] if word.startswith("pre") else word for word in name.lower().split("_"))
    return any(word.startswith("train") and not word.endswith("ed") for word in words)


# what a module's top level may hold and still only define things
DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)


def only_defines(tree: ast.Module) -> bool:
    """Whether the module's top level runs none of its code when started as a script: imports,
    definitions, a docstring and assignments that call none of its functions (SlowFast's
    tools/train_net.py, which tools/run_net.py imports), no ``if __name__ == '__main__':``."""
    own = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for statement in tree.body:
        if isinstance(statement, DEFINITIONS):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and not _calls_one_of(statement, own):
            continue
        return False
    return True


def _calls_one_of(statement: ast.AST, names: Set[str]) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
        for node in ast.walk(statement)
    )


class _MoveScan(cst.CSTVisitor):
    """Where the model is first moved to the device: the statement of its scope's body that holds
    that move (the anchor of the DDP statement); and whether the script is distributed already.
    On the way: every variable moved to the device, those whose ``.parameters()`` are passed to a
    call, and the lines of the calls of plain names."""

    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, target: str, plan: DistributedPlan, in_place: Optional[Dict[int, str]] = None):
        super().__init__()
        self.target = target
        self.plan = plan
        self.in_place_lines = {line for line, name in (in_place or {}).items() if name == target}
        self.in_place: Optional[cst.Assign] = None  # the assignment of the wrapper the wrap replaces
        self.in_place_line = 0
        self.scopes: List[cst.CSTNode] = []  # Module and FunctionDef nodes
        self.statements: List[Tuple[int, cst.CSTNode]] = []  # (scope depth, statement) being visited
        self.anchor: Optional[cst.CSTNode] = None
        self.anchor_scope: Optional[cst.CSTNode] = None
        self.anchor_line = 0
        self.already = 0  # line of a process-group or DDP set-up
        self.setup = ""  # its qualified name
        self.moved: Dict[str, int] = {}  # what is moved to the device (its code) -> line of the first move
        self.optimized: Set[str] = set()  # receivers of .parameters() calls passed to a call
        self.calls: Dict[int, int] = {}  # id of the Name a call calls -> line of the call
        self.fresh: List[Tuple[cst.CSTNode, int]] = []  # (scope, line): target = a value not read from it
        self.reads: List[Tuple[int, str]] = []  # (line, code of an argument) of load*(...) and open(...)
        self.aliases: Set[str] = {target}  # names bound to the same module (ssd's net = ssd_net)
        self.built: Dict[str, Tuple[int, str]] = {}  # name -> (line, function) of model = factory(...)

    def visit_Module(self, node):
        self.scopes.append(node)

    def visit_FunctionDef(self, node):
        self.scopes.append(node)

    def leave_FunctionDef(self, node):
        self.scopes.pop()

    def on_visit(self, node):
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.statements.append((len(self.scopes), node))
        return super().on_visit(node)

    def on_leave(self, node):
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.statements.pop()
        super().on_leave(node)

    def visit_ClassDef(self, node):
        # a class of the script's own deriving from a framework that distributes it (co-tracker's
        # Lite(LightningLite)): calling it sets the framework up
        for base in node.bases:
            self._note_setup(base.value, node)

    def visit_Call(self, node):
        self._note_setup(node.func, node)
        if isinstance(node.func, cst.Name):
            self.calls[id(node.func)] = self.get_metadata(PositionProvider, node).start.line
        for arg in node.args:
            self.optimized.update(_parameters_of(arg.value))
        name = _called_name(node)
        if name.startswith("load") or name == "open":
            line = self.get_metadata(PositionProvider, node).start.line
            self.reads += [(line, _code(arg.value)) for arg in node.args]

    def _note_setup(self, name: cst.BaseExpression, node: cst.CSTNode) -> None:
        """The first call (or class base) that sets up a process group, DDP or a framework."""
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, name, set())}
        if names & self.plan.setups and not self.already:
            self.already = self.get_metadata(PositionProvider, node).start.line
            self.setup = sorted(names & self.plan.setups)[0]

    def visit_SimpleStatementLine(self, node):
        self.aliases |= _aliased(node, self.aliases)
        moved = _moved(node)
        if moved and moved not in self.moved:
            self.moved[moved] = self.get_metadata(PositionProvider, node).start.line
        self._note_factory(node)
        if _binds_afresh(node, self.target):
            self.fresh.append((self.scopes[-1], self.get_metadata(PositionProvider, node).start.line))
        line = self.get_metadata(PositionProvider, node).start.line
        if self.in_place is None and line in self.in_place_lines and _assigns(node, self.target):
            # the wrap is here, whatever moves come before or after
            self.in_place, self.in_place_line = node.body[0], line
            self.anchor, self.anchor_scope = node, self.scopes[-1]
            self.anchor_line = self.get_metadata(PositionProvider, node).end.line
            return
        if self.anchor is None and self.plan.wrapper and moved == self.target:
            depth = len(self.scopes)
            # the outermost statement of the scope holding the move; the body of a script's
            # if __name__ == '__main__': is the script's own
            holding = [s for d, s in self.statements if d == depth]
            self.anchor = next(s for s in holding if not _is_main_guard(s))
            self.anchor_scope = self.scopes[-1]
            self.anchor_line = self.get_metadata(PositionProvider, self.anchor).end.line

    def _note_factory(self, line: cst.SimpleStatementLine) -> None:
        """``name = function(...)`` of a function outside torch: PyTorch-YOLOv3's load_model moves
        the model it builds, in another module."""
        statement = line.body[0] if len(line.body) == 1 else None
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
            return
        value = statement.value
        if not isinstance(value, cst.Call) or _is_move(value):
            return
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, value.func, set())}
        if not any(name == "torch" or name.startswith("torch.") for name in names):
            line_number = self.get_metadata(PositionProvider, line).start.line
            self.built.setdefault(_code(statement.targets[0].target), (line_number, _code(value.func)))

    def leave_IndentedBlock(self, node):
        self._past_initialisation(node.body)

    def leave_Module(self, node):
        self._past_initialisation(node.body)

    def _past_initialisation(self, body: Sequence[cst.CSTNode]) -> None:
        """The wrap goes after the ``model.apply(init)`` lines that follow the move: DDP copies
        rank 0's weights when it is built, and weights drawn after that differ between processes."""
        position = next((n for n, statement in enumerate(body) if statement is self.anchor), None)
        if self.anchor is None or position is None or self.in_place is not None:
            return
        # the run of .apply lines, other models' too, and their wraps (dcgan draws the generator's,
        # then the discriminator's weights)
        wrapper = self.plan.wrapper.split("(")[0]
        for following in body[position + 1 :]:
            receivers = _initialised(following)
            if not receivers and not _wraps(following, wrapper):
                break
            if any(_part_of(receiver, self.aliases) for receiver in receivers):
                self.anchor = following
        self.anchor_line = self.get_metadata(PositionProvider, self.anchor).end.line


def _initialised(statement: cst.CSTNode) -> List[str]:
    """The receivers of ``receiver.apply(...)`` lines: the statement's own, or those of an ``if``
    that holds only such lines and messages (ssd's ``if not args.resume: print(...);
    ssd_net.extras.apply(weights_init)``); [] for any other statement."""
    if isinstance(statement, cst.If) and statement.orelse is None:
        lines = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else []
        receivers = [_applied_to(line) for line in lines]
        if lines and all(r is not None or _is_message(line) for r, line in zip(receivers, lines)):
            return [r for r in receivers if r is not None]
        return []
    receiver = _applied_to(statement)
    return [receiver] if receiver is not None else []


def _is_message(line: cst.CSTNode) -> bool:
    """``print(...)`` or ``log*.info(...)`` alone on its line."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return False
    call = line.body[0].value if isinstance(line.body[0], cst.Expr) else None
    return isinstance(call, cst.Call) and _called_name(call) in ("print", "info", "debug", "warning")


def _part_of(receiver: str, names: Set[str]) -> bool:
    """``receiver`` is one of ``names`` or a submodule of one (``ssd_net.extras``)."""
    return receiver.split(".", 1)[0] in names if "." in receiver else receiver in names


def _aliased(line: cst.SimpleStatementLine, names: Set[str]) -> Set[str]:
    """The name ``a = b`` binds to one of ``names`` (either side): ssd's ``net = ssd_net``."""
    statement = line.body[0] if len(line.body) == 1 else None
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
        return set()
    left, right = statement.targets[0].target, statement.value
    if isinstance(left, cst.Name) and isinstance(right, cst.Name):
        if left.value in names or right.value in names:
            return {left.value, right.value}
    return set()


def _applied_to(statement: cst.CSTNode) -> Optional[str]:
    """The receiver of ``receiver.apply(...)`` alone on its line (None: another statement)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    call = statement.body[0].value if isinstance(statement.body[0], cst.Expr) else None
    if (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "apply"
    ):
        return _code(call.func.value)
    return None


def _wraps(statement: cst.CSTNode, wrapper: str) -> bool:
    """``name = <wrapper>(...)`` alone on its line: a model's wrap (the pass of another model wrote it)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    assign = statement.body[0]
    return (
        isinstance(assign, cst.Assign)
        and isinstance(assign.value, cst.Call)
        and _code(assign.value.func) == wrapper
    )


def _moved(line: cst.SimpleStatementLine) -> str:
    """What the line moves to the device: ``target = <...>.npu()`` / ``.to(...)``, or
    ``target.npu()`` alone ("" none)."""
    if len(line.body) != 1:
        return ""
    statement = line.body[0]
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1 and _is_move(statement.value):
        return _code(statement.targets[0].target)
    if isinstance(statement, cst.Expr) and _is_move(statement.value):
        return _code(statement.value.func.value)
    return ""


def _assigns(line: cst.SimpleStatementLine, target: str) -> bool:
    statement = line.body[0] if len(line.body) == 1 else None
    return (
        isinstance(statement, cst.Assign)
        and len(statement.targets) == 1
        and _code(statement.targets[0].target) == target
    )


FOLDER_TESTS = ("isdir", "exists")
_EQUAL = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)
FOLDER_MAKERS = ("os.mkdir", "os.makedirs")


def _folder_created_if_missing(node: cst.If) -> Optional[cst.If]:
    """``if not os.path.isdir(d): os.mkdir(d)`` (pytorch-cifar's checkpoint folder) with
    ``os.makedirs(d, exist_ok=True)``: under torchrun every process runs the test and the
    creation at once, and one loses the race with FileExistsError. None for anything else."""
    test, body = node.test, node.body.body
    if node.orelse is not None or not isinstance(test, cst.UnaryOperation) or len(body) != 1:
        return None
    tested = test.expression
    line = body[0]
    if not (isinstance(tested, cst.Call) and tested.args and isinstance(line, cst.SimpleStatementLine)):
        return None
    made = line.body[0].value if len(line.body) == 1 and isinstance(line.body[0], cst.Expr) else None
    if not (isinstance(test.operator, cst.Not) and isinstance(made, cst.Call) and made.args):
        return None
    if _code(tested.func).rpartition(".")[2] not in FOLDER_TESTS or _code(made.func) not in FOLDER_MAKERS:
        return None
    folder = made.args[0]
    if _code(folder.value) != _code(tested.args[0].value) or any(a.keyword for a in made.args[:1]):
        return None
    if any(a.keyword is not None and a.keyword.value == "exist_ok" for a in made.args):
        return None
    call = append_keyword(
        made.with_changes(func=cst.parse_expression("os.makedirs")), "exist_ok", cst.Name("True")
    )
    statement = line.with_changes(body=[line.body[0].with_changes(value=call)])
    return node.with_changes(body=node.body.with_changes(body=[statement]))


def _is_main_guard(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.If) and MAIN_GUARD.match(_code(statement.test)) is not None


def _binds_afresh(line: cst.SimpleStatementLine, target: str) -> bool:
    """``target = <a value that does not read target>``: a new model (``net = Net()``), not the
    wrapped one."""
    if len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return False
    statement = line.body[0]
    if len(statement.targets) != 1 or _code(statement.targets[0].target) != target:
        return False
    return re.search(rf"(?<![\w.]){re.escape(target)}(?!\w)", _code(statement.value)) is None


def _parameters_of(node: cst.BaseExpression) -> List[str]:
    """The receivers of the ``.parameters()`` calls an argument passes: itself, or in the list,
    tuple or dict (parameter groups) it builds."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "parameters":
            return [_code(func.value)]
        return []
    if isinstance(node, (cst.List, cst.Tuple, cst.Dict)):
        return [name for element in node.elements for name in _parameters_of(element.value)]
    return []


def _is_move(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MOVES
    )


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _called_name(call: cst.Call) -> str:
    """The last name of the callee: ``save`` of ``torch.save``."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    return name if isinstance(name, str) else ""


_BARRIER = "torch.distributed.barrier()"


class _Distribute(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider, ScopeProvider)

    def __init__(
        self, plan: DistributedPlan, target: str, shard_eval: bool, scan: _MoveScan, wrap_only: bool = False
    ):
        super().__init__()
        self.plan = plan
        self.target = target
        self.wrap_only = wrap_only  # a second model: the loaders, epochs and logging are done
        self.shard_eval = shard_eval
        self.scan = scan
        self.changes: List[Change] = []
        self.kept: List[Kept] = []
        self.scopes: List[cst.CSTNode] = []
        self.loader_names: List[Set[str]] = []  # per scope: names bound to (sharded) loaders
        self.assigned: List[Sequence[cst.AssignTarget]] = []  # of the assignments being visited
        self.rank_tests = 0  # enclosing ifs that test the rank
        self.sharded: List[int] = []  # lines of sharded loaders
        self.sharded_names: Set[str] = set()
        self.bound_to_none: Set[int] = set()  # ids of the Name targets of `x = None` visited so far
        self.guards: Set[int] = set()  # ids of the rank-0 ifs this pass wrote
        self.guarding_inside: Set[str] = set()  # the script's functions that guard a statement inside
        self.whole_withs: List[cst.With] = []  # the with blocks being visited that go on rank 0 whole
        self.epochs_set = 0
        # the first line after the wrap, where the wrap is, that binds the model afresh (0: none)
        self.rebound = min(
            (line for scope, line in scan.fresh if scope is scan.anchor_scope and line > scan.anchor_line),
            default=0,
        )

    # -- bookkeeping -------------------------------------------------------------------------

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def _keep(
        self, node: cst.CSTNode, name: str, rule_id: str, situation: str, works: bool = False, text: str = ""
    ):
        line = self._line(node)
        end = self.get_metadata(PositionProvider, node).end.line
        self.kept.append(Kept(line, name, end, name, rule_id, works, tip=text or self.plan.tips[situation]))

    def visit_Module(self, node):
        self.scopes.append(node)
        self.loader_names.append(set())
        self.guarding_inside = self._functions_guarding_inside(node)

    def visit_FunctionDef(self, node):
        self.scopes.append(node)
        self.loader_names.append(set())

    def leave_FunctionDef(self, original_node, updated_node):
        self.scopes.pop()
        self.loader_names.pop()
        if original_node is self.scan.anchor_scope and self.scan.in_place is None:
            self._report_returned_wrap(original_node)
        return updated_node

    def _report_returned_wrap(self, function: cst.FunctionDef) -> None:
        """The wrap is made in a function that returns the model (SRGAN's build_model): its callers,
        and the repository's own checkpoint helpers, get the wrapper, out of this pass's sight."""
        for returned in _returns(function):
            value = returned.value
            values = (
                [element.value for element in value.elements] if isinstance(value, cst.Tuple) else [value]
            )
            if any(_code(value) == self.target for value in values):
                text = model_tip(self.plan, "returned", self.target)
                self._keep(returned, self.target, self.plan.wrapper_rule, "returned", works=True, text=text)

    def visit_Assign(self, node):
        self.assigned.append(node.targets)
        if isinstance(node.value, cst.Name) and node.value.value == "None":
            self.bound_to_none.update(id(t.target) for t in node.targets if isinstance(t.target, cst.Name))
        for target in node.targets:
            for name in _names(target.target):
                if "loader" in name.lower():
                    self.loader_names[-1].add(name)

    def leave_Assign(self, original_node, updated_node):
        self.assigned.pop()
        if original_node is self.scan.in_place:
            return updated_node.with_changes(value=self._in_place_of_wrapper(original_node.value))
        return updated_node

    def visit_If(self, node):
        if any(word in _code(node.test).lower() for word in RANK_TESTS):
            self.rank_tests += 1

    def leave_If(self, original_node, updated_node):
        if any(word in _code(original_node.test).lower() for word in RANK_TESTS):
            self.rank_tests -= 1
        if not self._guarding():
            return updated_node
        created = _folder_created_if_missing(updated_node)
        if created is None:
            return updated_node
        line = self._line(original_node)
        message = "create the folder with exist_ok=True: every process tests for it and creates it at once"
        self.changes.append(Change(line, line, MODIFY, message, self.plan.guard_rule))
        return created

    # -- the model: DDP after its first move, and .module after that ---------------------------

    def _in_place_of_wrapper(self, value: cst.BaseExpression) -> cst.BaseExpression:
        """The wrap of the model the script put in a DataParallel (``value``, of the tree the scan
        read: kept by the full migration, or replaced by the model already), moved to the device
        first unless it was so before."""
        if _is_move(value):
            value = value.func.value  # DataParallel(model).cuda(): the wrap moves it
        model = self._wrapped_model(value)
        code = _code(model)
        if not isinstance(model, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            code = f"({code})"
        if self.plan.move and not 0 < self.scan.moved.get(self.target, 0) < self.scan.in_place_line:
            code = self.plan.move.format(model=code)
        wrap = self.plan.wrapper.format(model=code)
        line = self.scan.in_place_line
        message = (
            f"wrap {self.target} in {wrap.split('(')[0]} in place of its DataParallel "
            "(the same .module and checkpoint keys)"
        )
        self.changes.append(Change(line, line, MODIFY, message, self.plan.wrapper_rule))
        return cst.parse_expression(wrap)

    def _wrapped_model(self, value: cst.BaseExpression) -> cst.BaseExpression:
        """The model in a DataParallel call (its first argument, or ``module=``); else ``value``."""
        if not isinstance(value, cst.Call):
            return value
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, value.func, set())}
        if not names & self.plan.replaces:
            return value
        for position, arg in enumerate(value.args):
            if not arg.star and (arg.keyword.value == "module" if arg.keyword else position == 0):
                return arg.value
        return value

    def _wrap_after_anchor(self, original_body, updated_body) -> list:
        body = list(updated_body)
        if self.scan.anchor is None or self.scan.in_place is not None:
            return body
        for position, statement in enumerate(original_body):
            if statement is self.scan.anchor:
                code = self.plan.wrapper.format(model=self.target)
                wrap = cst.parse_statement(f"{self.target} = {code}\n")
                body.insert(position + 1, wrap)
                line = self.scan.anchor_line
                message = f"wrap {self.target} in {code.split('(')[0]} after it is moved to the device"
                self.changes.append(Change(line, line, INSERT, message, self.plan.wrapper_rule))
        return body

    def leave_IndentedBlock(self, original_node, updated_node):
        body = self._merged_guards(self._wrap_after_anchor(original_node.body, updated_node.body))
        return updated_node.with_changes(body=body)

    def leave_Module(self, original_node, updated_node):
        body = self._merged_guards(self._wrap_after_anchor(original_node.body, updated_node.body))
        return updated_node.with_changes(body=body)

    def _merged_guards(self, body: list) -> list:
        """Statements guarded one after the other share one ``if`` (no comment between them)."""
        merged: list = []
        for statement in body:
            previous = merged[-1] if merged else None
            if id(statement) in self.guards and id(previous) in self.guards and not statement.leading_lines:
                joined = previous.with_changes(
                    body=previous.body.with_changes(body=list(previous.body.body) + list(statement.body.body))
                )
                self.guards.add(id(joined))
                merged[-1] = joined
            else:
                merged.append(statement)
        return merged

    def visit_Import(self, node):
        return False  # `import model.x` names a package, never an attribute of the model

    def visit_ImportFrom(self, node):
        return False

    def leave_Attribute(self, original_node, updated_node):
        if self.plan.wrapper and self.scan.anchor is not None and self._model_s_own(original_node):
            return self._through_module(original_node, updated_node)
        return updated_node

    def _model_s_own(self, node: cst.Attribute) -> bool:
        """``model.<attribute>`` that the wrapper does not answer as the model did: a method whose
        result must keep the model's keys (state_dict), or any attribute but its own members."""
        if self.scan.in_place is not None or _code(node.value) != self.target:
            return False  # in place of DataParallel: the script reads .module itself
        name = node.attr.value
        if name in self.plan.module_methods:
            return True
        members = self.plan.wrapper_members
        return bool(members) and name not in members and not name.startswith("_")

    def _through_module(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        name = f"{self.target}.{original.attr.value}"
        if self.scopes[-1] is self.scan.anchor_scope:
            line = self._line(original)
            if line <= self.scan.anchor_line:
                return updated
            if 0 < self.rebound < line:  # the model built again: the bare one, as far as can be told
                text = model_tip(self.plan, "rebound", self.target)
                self._keep(original, name, self.plan.wrapper_rule, "rebound", works=True, text=text)
                return updated
        else:
            after = self._runs_after_the_wrap(original.value)
            if after is None:
                return updated
            if not after:
                text = model_tip(self.plan, "function", self.target)
                self._keep(original, name, self.plan.wrapper_rule, "function", text=text)
                return updated
        attribute = original.attr.value
        if attribute in self.plan.module_methods:
            message = f"call {self.target}.module.{attribute}: the model is wrapped in DDP"
        else:
            message = f"read {self.target}.module.{attribute}: the model's own, not the DDP wrapper's"
        line = self._line(original)
        self.changes.append(Change(line, line, MODIFY, message, self.plan.wrapper_rule))
        return updated.with_changes(value=cst.parse_expression(f"{self.target}.module"))

    def _runs_after_the_wrap(self, model: cst.BaseExpression) -> Optional[bool]:
        """For the model read in a function: None when it is not the binding the wrap replaces;
        True when the function is defined where the wrap is and every use of its name is a call
        after the wrap; False when it may run on the wrapped model and on the bare one (called
        before and after the wrap, used other than by a call, defined elsewhere) or is never called.
        Every call before the wrap: None (it runs on the bare model, as written)."""
        home = self.get_metadata(ScopeProvider, self.scan.anchor, None)
        scope = self.get_metadata(ScopeProvider, model, None)
        if not isinstance(model, cst.Name) or home is None or scope is None or scope is home:
            return None
        assignments = scope[self.target] if self.target in scope else set()
        if not assignments or any(a.scope is not home for a in assignments):
            return None
        function = self.scopes[-1]
        if (
            not isinstance(function, cst.FunctionDef)
            or self.get_metadata(ScopeProvider, function, None) is not home
        ):
            return False
        if self.rebound:  # the name holds the wrapped model, then a bare one
            return False
        bindings = list(home.assignments[function.name.value])
        if len(bindings) != 1 or bindings[0].node is not function:
            return False
        lines = [self.scan.calls.get(id(access.node), 0) for access in bindings[0].references]
        if lines and all(0 < line <= self.scan.anchor_line for line in lines):
            return None
        return bool(lines) and all(line > self.scan.anchor_line for line in lines)

    def _calls_through_module(self, call: cst.Call) -> bool:
        """``model.module(x)``: only a wrapper has ``.module``, so the call runs after the wrap,
        around it (glow's first-batch initialisation, written for DataParallel)."""
        return _code(call.func) == f"{self.target}.module"

    # -- data loaders --------------------------------------------------------------------------

    def leave_Call(self, original_node, updated_node):
        if (
            "module_call" in self.plan.tips
            and self.scan.anchor is not None
            and self._calls_through_module(original_node)
        ):
            text = model_tip(self.plan, "module_call", self.target)
            self._keep(
                original_node, f"{self.target}.module", self.plan.wrapper_rule, "module_call", True, text
            )
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, original_node.func, set())}
        if names & self.plan.loaders and self.plan.sampler:
            return updated_node if self.wrap_only else self._shard(original_node, updated_node)
        return updated_node

    def _shard(self, original: cst.Call, call: cst.Call) -> cst.Call:
        rule = self.plan.loader_rule
        keywords = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        if any(arg.star for arg in call.args):
            self._keep(original, LOADER, rule, "unpacked")
            return call
        if "sampler" in keywords and self._is_none(original, keywords["sampler"]):
            no_sampler = keywords.pop("sampler")
            call = call.with_changes(args=[arg for arg in call.args if arg is not no_sampler])
        if "sampler" in keywords or "batch_sampler" in keywords or len(positional) > 3:
            self._keep(original, LOADER, rule, "sampler")
            return call
        shuffle = keywords.get("shuffle") or (positional[2] if len(positional) > 2 else None)
        shuffle_code = _code(shuffle.value) if shuffle is not None else "False"
        dataset = keywords.get("dataset") or (positional[0] if positional else None)
        if not self._is_training(dataset, shuffle_code):
            if not self.shard_eval:
                self._keep(original, LOADER, rule, "evaluation", works=True)
                return call
        if dataset is None or not _evaluated_twice_safely(dataset.value):
            self._keep(original, LOADER, rule, "dataset")
            return call
        sampler = f"{self.plan.sampler}({_code(dataset.value)}, shuffle={shuffle_code})"
        args = [arg for arg in call.args if arg is not shuffle]
        no_space = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        new = cst.Arg(cst.parse_expression(sampler), keyword=cst.Name("sampler"), equal=no_space)
        args.append(_closing_the_call(new, original.args[-1]) if original.args else new)
        if len(args) > 1:  # the argument before the new one gives it its place before ")"
            args[-2] = args[-2].with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
        line = self._line(original)
        message = f"shard the loader: sampler={sampler} (its shuffle moves into the sampler)"
        self.changes.append(Change(line, line, MODIFY, message, rule))
        self.sharded.append(line)
        for target in self.assigned[-1] if self.assigned else ():
            for name in _names(target.target):
                self.loader_names[-1].add(name)
                self.sharded_names.add(name)
        return call.with_changes(args=args)

    def _is_none(self, original: cst.Call, sampler: cst.Arg) -> bool:
        """``sampler=None``, or a name that is only ever bound to None before the loader
        (SupContrast's ``train_sampler = None``): no sampler of the project's own."""
        value = sampler.value
        if isinstance(value, cst.Name) and value.value == "None":
            return True
        original_value = next(
            arg.value for arg in original.args if arg.keyword and arg.keyword.value == "sampler"
        )
        if not isinstance(original_value, cst.Name):
            return False
        scope = self.get_metadata(ScopeProvider, original_value, None)
        bindings = scope[original_value.value] if scope is not None and original_value.value in scope else ()
        return bool(bindings) and all(id(binding.node) in self.bound_to_none for binding in bindings)

    def _is_training(self, dataset, shuffle_code: str) -> bool:
        """A loader that shuffles (``shuffle=True``), or whose names hold a training word; one
        whose shuffle is a value (SRGAN's ``config["TEST"]["HYP"]["SHUFFLE"]``, False there) and
        whose names hold only an evaluation word is an evaluation loader."""
        if shuffle_code == "True":
            return True
        words = self._loader_words(dataset)
        if any(word in words for word in self.plan.train_words):
            return True
        if shuffle_code in ("False", "None", "0"):
            return False
        return not any(word in words for word in self.plan.eval_words)

    def _loader_words(self, dataset) -> str:
        """The names of the loader: what it is assigned to, its dataset and its function."""
        return " ".join(
            [
                " ".join(_code(t.target) for t in self.assigned[-1]) if self.assigned else "",
                _code(dataset.value) if dataset is not None else "",
                self.scopes[-1].name.value if isinstance(self.scopes[-1], cst.FunctionDef) else "",
            ]
        ).lower()

    # -- epochs ----------------------------------------------------------------------------------

    def leave_For(self, original_node, updated_node):
        target = _code(original_node.target)
        if "epoch" not in target or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        if "set_epoch" in _code(original_node.body) or not self.plan.sampler or self.wrap_only:
            return updated_node
        loaders = self._loaders_in_scope()
        if not loaders:
            return updated_node
        lines = [
            f"if isinstance(getattr({name}, 'sampler', None), {self.plan.sampler}):\n"
            f"    {name}.sampler.set_epoch({target})\n"
            for name in loaders
        ]
        statements = [cst.parse_statement(line) for line in lines]
        body = updated_node.body.with_changes(body=statements + list(updated_node.body.body))
        line = self._line(original_node)
        message = f"call sampler.set_epoch({target}) first in each epoch ({', '.join(loaders)})"
        self.changes.append(Change(line, line, INSERT, message, self.plan.loader_rule))
        self.epochs_set += 1
        return updated_node.with_changes(body=body)

    def _loaders_in_scope(self) -> List[str]:
        """The loaders an epoch loop reshuffles: those named for training (or sharded here),
        else every name of a loader in scope (their samplers are tested before use)."""
        names = set().union(*self.loader_names)
        training = {
            n for n in names if n in self.sharded_names or any(w in n.lower() for w in self.plan.train_words)
        }
        return sorted(training or names)

    # -- rank 0 ----------------------------------------------------------------------------------

    def visit_With(self, node):
        if self._guarding() and self._writes_only_guarded(node):
            self.whole_withs.append(node)

    def leave_With(self, original_node, updated_node):
        if not self.whole_withs or self.whole_withs[-1] is not original_node:
            return updated_node
        self.whole_withs.pop()
        line = self._line(original_node)
        paths = {_code(item.item.args[0].value) for item in original_node.items if item.item.args}
        return self._on_rank_zero(updated_node, line, self._read_after(paths, line))

    def _writes_only_guarded(self, node: cst.With) -> bool:
        """``with open(PATH, 'wb') as f: torch.save(model, f)`` (TCN): opening truncates the file, so
        the whole block runs on rank 0, not only its save, when each of its statements would be
        guarded."""
        if not all(
            isinstance(item.item, cst.Call) and _code(item.item.func) in ("open", "io.open")
            for item in node.items
        ):
            return False
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]
        return bool(body) and all(self._guarded_statement(line) is not None for line in body)

    def _guarded_statement(self, line: cst.CSTNode) -> Optional[cst.Call]:
        """The call that is the statement, where this pass guards it."""
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        statement = line.body[0]
        if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
            return None
        return statement.value if self._guards(statement.value) else None

    def _guarding(self) -> bool:
        return bool(self.plan.guard_test) and not self.rank_tests and not self.wrap_only

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if not self._guarding() or self.whole_withs:  # inside a block guarded whole
            return updated_node
        call = self._guarded_statement(original_node)
        if call is None:
            return updated_node
        line = self._line(original_node)
        return self._on_rank_zero(updated_node, line, self._read_later(call, line))

    def _on_rank_zero(self, statement: cst.CSTNode, line: int, read_later: bool):
        """``statement`` under the rank-0 test, then a barrier where the script reads its file later."""
        self.changes.append(
            Change(
                line, line, MODIFY, f"run it on rank 0 only ({self.plan.guard_test})", self.plan.guard_rule
            )
        )
        guard = cst.If(
            test=cst.parse_expression(self.plan.guard_test),
            body=cst.IndentedBlock([statement.with_changes(leading_lines=[])]),
            leading_lines=statement.leading_lines,
        )
        self.guards.add(id(guard))
        if not read_later:
            return guard
        self.changes.append(
            Change(line, line, INSERT, f"wait for rank 0's file ({_BARRIER})", self.plan.guard_rule)
        )
        return cst.FlattenSentinel([guard, cst.parse_statement(_BARRIER + "\n")])

    def _read_later(self, call: cst.Call, line: int) -> bool:
        """A save whose file (an argument after the first, ``torch.save(obj, PATH)``) the script reads
        after it (``torch.load(PATH)``): the other processes must wait for rank 0 to write it."""
        if not _called_name(call).startswith("save"):
            return False
        paths = {_code(arg.value) for arg in call.args[1:]} | {
            _code(arg.value) for arg in call.args if arg.keyword is not None and arg.keyword.value == "f"
        }
        return self._read_after(paths, line)

    def _read_after(self, paths: Set[str], line: int) -> bool:
        return any(later > line and code in paths for later, code in self.scan.reads)

    def _only_formats(self, call: cst.Call) -> bool:
        """Its arguments call nothing but ``argument_calls``: running them on one process is safe."""
        for node in _calls_in([arg.value for arg in call.args]):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            if name not in self.plan.argument_calls:
                return False
        return True

    def _functions_guarding_inside(self, module: cst.Module) -> Set[str]:
        """The names of the script's functions that guard a save followed by a barrier (one the
        script reads back), and of those that call them: their calls stay unguarded, so every
        process reaches that barrier (DeepSDF's ``save_latest(epoch)`` hung: its save was read
        later). Other saving functions are called on rank 0, as a whole."""
        found = _StatementCalls()
        module.visit(found)
        guarded = {
            name
            for name, calls in found.by_function.items()
            if any(self._guards(c) and self._read_later(c, self._line(c)) for c in calls)
        }
        grew = True
        while grew:  # and the functions that call one of those
            before = len(guarded)
            guarded |= {
                name
                for name, calls in found.by_function.items()
                if any(isinstance(c.func, cst.Name) and c.func.value in guarded for c in calls)
            }
            grew = len(guarded) > before
        return guarded

    def _guards(self, call: cst.Call) -> bool:
        """Whether this pass puts a rank-0 guard around a statement that is this call."""
        return self._guarded(call) and self._only_formats(call)

    def _guarded(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Name) and call.func.value in self.guarding_inside:
            return False
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, call.func, set())}
        if names & self.plan.guarded_calls:
            return True
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if isinstance(func, cst.Attribute) and name in self.plan.logger_methods:
            return "log" in _code(func.value).lower()
        return isinstance(name, str) and name.startswith(self.plan.guarded_prefixes)

    def report_leftovers(self) -> None:
        if self.plan.wrapper and self.scan.anchor is None:
            line = 1
            self.kept.append(
                Kept(
                    line,
                    self.target,
                    line,
                    self.target,
                    self.plan.wrapper_rule,
                    tip=model_tip(self.plan, "no_move", self.target),
                )
            )
        if self.sharded and not self.epochs_set:
            line = self.sharded[0]
            tip = self.plan.tips["set_epoch"]
            self.kept.append(Kept(line, "set_epoch", line, "set_epoch", self.plan.loader_rule, tip=tip))


class _Returns(cst.CSTVisitor):
    """The return statements of a function, not of the functions and classes it defines."""

    def __init__(self, function: cst.FunctionDef):
        self.function = function
        self.found: List[cst.Return] = []

    def visit_FunctionDef(self, node):
        return node is self.function

    def visit_ClassDef(self, node):
        return False

    def visit_Return(self, node):
        if node.value is not None:
            self.found.append(node)


def _returns(function: cst.FunctionDef) -> List[cst.Return]:
    visitor = _Returns(function)
    function.visit(visitor)
    return visitor.found


class _StatementCalls(cst.CSTVisitor):
    """By function name, the calls its body makes as statements of their own (nested functions
    count for the function around them too)."""

    def __init__(self):
        super().__init__()
        self.functions: List[str] = []
        self.by_function: Dict[str, List[cst.Call]] = {}

    def visit_FunctionDef(self, node):
        self.functions.append(node.name.value)
        self.by_function.setdefault(node.name.value, [])

    def leave_FunctionDef(self, original_node):
        self.functions.pop()

    def visit_Expr(self, node):
        if isinstance(node.value, cst.Call):
            for name in self.functions:
                self.by_function[name].append(node.value)


class _Calls(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.found: List[cst.Call] = []

    def visit_Call(self, node):
        self.found.append(node)


def _calls_in(nodes) -> List[cst.Call]:
    collector = _Calls()
    for node in nodes:
        node.visit(collector)
    return collector.found


def _names(target: cst.BaseExpression) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _names(element.value)]
    return []


def _closing_the_call(new: cst.Arg, last: cst.Arg) -> cst.Arg:
    """``new`` with the layout before ")" of the call's last argument (a trailing comma, a ")" on
    its own line)."""
    return new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)


def _evaluated_twice_safely(node: cst.BaseExpression) -> bool:
    """A name or attribute chain: the sampler may read it again."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)
