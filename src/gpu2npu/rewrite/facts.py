"""What a file's own code says about the values it passes as devices.

Device arguments are wrapped for the integer case only where the value may be an int. To
know that, we look at how the file binds the names involved: ``device = 'cuda'`` binds a
string, ``parser.add_argument('--gpu', type=int)`` makes ``args.gpu`` an int, and so on.
The facts come from the stdlib ``ast`` (several times faster than a second libcst pass) and
are built lazily: only files that reach a device-argument decision pay for them.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Set

from gpu2npu.rewrite.callers import caller_arguments
from gpu2npu.rewrite.device_selection import narrows_visible_devices
from gpu2npu.source.imports import file_imports, imports_table, qualify
from gpu2npu.source.modules import is_script
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes
from gpu2npu.source.torch_names import DTYPE_NAMES

UNKNOWN = "unknown"
NOT_INT = frozenset({"str", "device", "tensor", "none", "dtype"})
# functions a kernel compiler traces, where .to(x) casts a value and never moves one: Triton's and
# the CuTe DSL's (mamba's mamba_ssm/ops/cute/: tXrX.load().to(Float32))
KERNEL_DECORATORS = frozenset(
    {"triton.jit", "triton.autotune", "triton.heuristics", "cutlass.cute.jit", "cutlass.cute.kernel"}
)

# torch functions that return a torch.device (device-agnostic code passes these around).
DEVICE_FACTORIES = frozenset({"device", "current_accelerator", "get_default_device"})
# Methods that return a tensor (or, on a module, the module) whatever the receiver: a value
# built by one is no device index (``p_data_fp32 = p.data.float()``).
TENSOR_METHODS = frozenset(
    "float half double bfloat16 long int short bool byte char clone detach contiguous cpu cuda npu to view "
    "reshape permute transpose expand expand_as squeeze unsqueeze flatten type_as new_tensor new_zeros "
    "new_ones new_empty new_full pin_memory".split()
)
# Functions that return an int: their result is a device index when passed as a device.
INT_FUNCTIONS = frozenset(
    {"int", "len", "torch.distributed.get_rank", "torch.distributed.get_world_size"}
    | {
        f"{module}.{name}"
        for module in ("torch.cuda", "torch.npu", "torch_npu.npu")
        for name in ("current_device", "device_count")
    }
)
# Methods that return a device name (DeepSpeed's ``get_accelerator().device_name(rank)``: 'cuda:0').
STR_METHODS = frozenset({"device_name", "current_device_name"})
TENSOR_FACTORIES = frozenset(
    "tensor zeros ones empty rand randn randint full arange linspace as_tensor from_numpy stack cat "
    "zeros_like ones_like empty_like rand_like randn_like full_like".split()
)


def classes_defining(tree: ast.AST, method: str, known: Set[str] = frozenset()) -> Set[str]:
    """Names of the classes in ``tree`` that define ``method`` or inherit it from a class that
    does (``known``: such classes found elsewhere in the project)."""
    found = set(known)
    bases: Dict[str, Set[str]] = {}
    for node in module_nodes(tree):
        if isinstance(node, ast.ClassDef):
            bases[node.name] = {(dotted(base) or "").rsplit(".", 1)[-1] for base in node.bases}
            if any(
                isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method
                for item in node.body
            ):
                found.add(node.name)
    grew = True
    while grew:
        grew = False
        for name, parents in bases.items():
            if name not in found and parents & found:
                found.add(name)
                grew = True
    return found - set(known) if known else found


def constructor_subclasses(tree: ast.AST, helpers: Mapping[str, str]) -> Dict[str, str]:
    """Module-level classes with one base, one of ``helpers`` (qualified name -> the helper it
    is), and no ``__init__`` or ``__new__`` of their own, with the helper each builds as: calling
    one is a call of the helper's constructor, which the helper's keyword edits fit (composer's
    ``ClosureGradScaler(GradScaler)``: ``ClosureGradScaler()`` turns itself off on the NPU
    without device='npu')."""
    imports = file_imports(tree)
    found = {}
    for node in getattr(tree, "body", []):
        if not isinstance(node, ast.ClassDef) or len(node.bases) != 1 or node.keywords:
            continue
        base = qualify(dotted(node.bases[0]) or "", imports)
        methods = {
            item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        if base in helpers and not methods & {"__init__", "__new__"}:
            found[node.name] = helpers[base]
    return found


def file_constructor_subclasses(
    source: str, tree: Optional[ast.AST], edits: Mapping[str, object], reexports: Mapping[str, str]
) -> Dict[str, str]:
    """constructor_subclasses of a module for helpers with keyword ``edits`` (a library's, or one
    a project module re-exports: ``reexports``), read only where a module-level class statement
    names one as its base; ``tree`` None: parsed here."""
    if not edits:
        return {}
    helpers = {**{helper: helper for helper in edits}, **reexports}
    words = "|".join(sorted({re.escape(helper.rsplit(".", 1)[-1]) for helper in helpers}))
    if re.search(r"(?m)^class[ \t]+\w+[ \t]*\([ \t]*[\w.]*\b(?:%s)[ \t]*\)" % words, source) is None:
        return {}
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return {}
    return constructor_subclasses(tree, helpers)


def with_names(triggers: Optional["re.Pattern[str]"], names: Iterable[str]) -> Optional["re.Pattern[str]"]:
    """Trigger words (None: every statement is visited) with ``names`` as words too."""
    names = sorted(names)
    if triggers is None or not names:
        return triggers
    return re.compile(r"%s|\b(?:%s)\b" % (triggers.pattern, "|".join(map(re.escape, names))))


BUILTIN_DTYPES = frozenset({"float", "int", "bool", "complex"})


@dataclass
class ScopeFacts:
    """The names one function (or the module) binds, and to what."""

    start: int
    end: int
    parent: Optional["ScopeFacts"]
    bindings: Dict[str, List[tuple]] = field(
        default_factory=lambda: defaultdict(list)
    )  # name -> [(value, scope)]
    opaque: Set[str] = field(default_factory=set)  # bound by something we cannot read
    # where a name is bound opaquely after the scope starts (a loop's target; not a parameter)
    opaque_at: Dict[str, List[int]] = field(default_factory=lambda: defaultdict(list))
    # assignments that are statements of a function's body (no branch skips them): name ->
    # [(last line of the statement, value)]; the last one before a use is the one that reaches it
    straight: Dict[str, List[tuple]] = field(default_factory=lambda: defaultdict(list))
    decorators: List[str] = field(default_factory=list)  # dotted names, as the file spells them


class FileFacts:
    """Bindings of one file: plain names per function scope, dotted ones (``self.device``) per file."""

    def __init__(self, source: str, tree: Optional[ast.AST] = None, module_imported: bool = False):
        """``module_imported``: some file of the project imports this one (so its functions may
        have callers elsewhere)."""
        self.module = ScopeFacts(0, 10**9, None)
        self.scopes: List[ScopeFacts] = [self.module]
        self.attributes: Dict[str, List[tuple]] = defaultdict(list)
        self.opaque_attributes: Set[str] = set()
        self.argparse_dests: Dict[str, str] = {}
        self.namespaces: Set[str] = set()  # names holding parse_args() results
        self.imports: Dict[str, str] = {}  # local alias -> what it imports, file-wide
        self._import_statements: List[ast.AST] = []  # met during the scan
        self._used_names: Optional[Set[str]] = None
        self._loop_variables: Optional[Set[str]] = None
        self._narrows: Optional[bool] = None
        self._function_scopes: Dict[int, ScopeFacts] = {}  # id(module-level def) -> its scope
        self.returns: Dict[str, str] = {}  # module-level function -> the kind its annotation returns
        self.tree: Optional[ast.AST] = tree
        if tree is None:
            try:
                self.tree = ast.parse(source)
            except (SyntaxError, ValueError):
                return  # libcst accepted it but this Python's ast did not: everything stays unknown
        self._scan(self.tree, self.module)
        self.imports = imports_table(self._import_statements)
        if not module_imported and is_script(self.tree):
            self._bind_parameters_from_callers()

    @property
    def used_names(self) -> Set[str]:
        """Every plain name the file reads anywhere (assigning one is no use of an import)."""
        if self._used_names is None:
            nodes = module_nodes(self.tree) if self.tree is not None else ()
            reads = (ast.Load, ast.Del)
            self._used_names = {
                node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, reads)
            }
        return self._used_names

    @property
    def loop_variables(self) -> Set[str]:
        """The names for loops and comprehensions bind anywhere in the file (``for i, x in ...``)."""
        if self._loop_variables is None:
            nodes = module_nodes(self.tree) if self.tree is not None else ()
            loops = (ast.For, ast.AsyncFor, ast.comprehension)
            self._loop_variables = {
                name.id
                for node in nodes
                if isinstance(node, loops)
                for name in ast.walk(node.target)
                if isinstance(name, ast.Name)
            }
        return self._loop_variables

    @property
    def narrows_visible_devices(self) -> bool:
        """Whether the file sets the visible cards in Python (``os.environ['CUDA_VISIBLE_DEVICES']``):
        after that, the process numbers the cards it sees from 0."""
        if self._narrows is None:
            self._narrows = self.tree is not None and narrows_visible_devices(self.tree)
        return self._narrows

    def classes_defining(self, method: str) -> Set[str]:
        return classes_defining(self.tree, method) if self.tree is not None else set()

    def instance_classes(self, name: str, line: int) -> Set[str]:
        """Classes the objects bound to ``name`` (visible at ``line``) were built from."""
        if "." in name:
            values = self.attributes.get(name, [])
        else:
            values = []
            scope: Optional[ScopeFacts] = self.scope_at(line)
            while scope is not None:
                if name in scope.opaque:
                    break
                if name in scope.bindings:
                    values = scope.bindings[name]
                    break
                scope = scope.parent
        found = set()
        for value, _ in values:
            if isinstance(value, ast.Call):
                callee = dotted(value.func)
                if callee:
                    found.add(callee.rsplit(".", 1)[-1])
        return found

    # -- collection ------------------------------------------------------------------------

    def _scan(self, node: ast.AST, scope: ScopeFacts) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                self._enter(child, scope)
                continue
            self._read(child, scope)
            self._scan(child, scope)

    def _enter(self, definition: ast.AST, outer: ScopeFacts) -> None:
        """A def, lambda or class: its decorators and defaults belong to the outer scope."""
        for decorator in getattr(definition, "decorator_list", []):
            self._scan(decorator, outer)
        if isinstance(definition, ast.ClassDef):
            for base in definition.bases:
                self._scan(base, outer)
        else:
            for default in definition.args.defaults + [
                d for d in definition.args.kw_defaults if d is not None
            ]:
                self._scan(default, outer)
        if not isinstance(definition, ast.Lambda):
            outer.opaque.add(definition.name)
            outer.opaque_at[definition.name].append(definition.lineno)
        inner = ScopeFacts(
            definition.lineno, getattr(definition, "end_lineno", definition.lineno) or 10**9, outer
        )
        inner.decorators = [_decorator_name(d) for d in getattr(definition, "decorator_list", [])]
        self.scopes.append(inner)
        if outer is self.module:
            self._function_scopes[id(definition)] = inner
            self._note_returns(definition)
        if not isinstance(definition, ast.ClassDef):
            self._bind_parameters(definition.args, inner)
        body = definition.body if isinstance(definition.body, list) else [definition.body]
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                self._enter(statement, inner)
            else:
                if not isinstance(definition, ast.ClassDef):
                    _note_straight(statement, inner)
                self._read(statement, inner)
                self._scan(statement, inner)

    def _note_returns(self, definition: ast.AST) -> None:
        """What a module-level function's annotation says it returns (``def name() -> str``);
        unknown where the module defines the name twice or leaves it unannotated."""
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = _annotation_kind(definition.returns) if definition.returns is not None else UNKNOWN
            seen = self.returns.get(definition.name, kind)
            self.returns[definition.name] = kind if seen == kind else UNKNOWN

    def _bind_parameters_from_callers(self) -> None:
        """A script's own calls tell what its functions' unannotated parameters hold."""
        for function, parameter, values in caller_arguments(self.tree):
            scope = self._function_scopes[id(function)]
            if parameter in scope.opaque:
                scope.opaque.discard(parameter)
                where = [
                    (value, self.scope_at(call.lineno) if call else self.module) for value, call in values
                ]
                scope.bindings[parameter] = where + scope.bindings.get(parameter, [])

    def _read(self, node: ast.AST, scope: ScopeFacts) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, node.value, scope)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            self._bind_annotated(node, scope)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._bind_opaque(node.target, scope)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind_opaque(node.optional_vars, scope)
        elif isinstance(node, ast.NamedExpr):
            self._bind_target(node.target, node.value, scope)
        elif isinstance(node, ast.Call):
            self._read_add_argument(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import_statements.append(node)

    def _bind(self, name: str, value: ast.AST, scope: ScopeFacts) -> None:
        if "." in name:
            self.attributes[name].append((value, scope))
        else:
            scope.bindings[name].append((value, scope))

    def _bind_target(self, target: ast.AST, value: ast.AST, scope: ScopeFacts) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            if values is not None and len(values) == len(target.elts):
                for sub_target, sub_value in zip(target.elts, values):
                    self._bind_target(sub_target, sub_value, scope)
                return
            if _is_call_to(value, "parse_known_args") and target.elts:
                name = dotted(target.elts[0])
                if name:
                    self.namespaces.add(name)
            self._bind_opaque(target, scope)
            return
        name = dotted(target)
        if name is None:
            return
        if _is_call_to(value, "parse_args"):
            self.namespaces.add(name)
        self._bind(name, value, scope)

    def _bind_annotated(self, node, scope: ScopeFacts) -> None:
        name = dotted(node.target)
        if name is None:
            return
        if isinstance(node, ast.AnnAssign) and _annotation_kind(node.annotation) in NOT_INT:
            self._bind(name, ast.Constant(value=""), scope)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._bind(name, node.value, scope)
        else:
            self._bind_opaque(node.target, scope)

    def _bind_opaque(self, target: ast.AST, scope: ScopeFacts) -> None:
        for node in ast.walk(target):
            name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if name and "." in name:
                self.opaque_attributes.add(name)
            elif name:
                scope.opaque.add(name)
                scope.opaque_at[name].append(node.lineno)

    def _bind_parameters(self, arguments: ast.arguments, scope: ScopeFacts) -> None:
        params = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
        for extra in (arguments.vararg, arguments.kwarg):
            if extra is not None:
                params.append(extra)
        for param in params:
            annotation = param.annotation
            if annotation is not None and _annotation_kind(annotation) in NOT_INT:
                scope.bindings[param.arg].append((ast.Constant(value=""), scope))
            elif annotation is not None and _only_int(annotation):
                scope.bindings[param.arg].append((ast.Constant(value=0), scope))
            else:
                scope.opaque.add(param.arg)

    def qualified(self, name: str) -> str:
        """``name`` through the file's imports (``pt.device`` -> ``torch.device``)."""
        return qualify(name, self.imports)

    def _read_add_argument(self, call: ast.Call) -> None:
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            return
        dest = _argparse_dest(call)
        if dest:
            previous = self.argparse_dests.get(dest)
            kind = _argparse_kind(call)
            self.argparse_dests[dest] = kind if previous in (None, kind) else UNKNOWN

    # -- queries ---------------------------------------------------------------------------

    def scope_at(self, line: int) -> ScopeFacts:
        """The innermost function (or the module) whose lines contain ``line``."""
        best = self.module
        for scope in self.scopes[1:]:
            if scope.start <= line <= scope.end and scope.start >= best.start:
                best = scope
        return best

    def value_kinds(
        self, node: ast.AST, scope: ScopeFacts, depth: int = 0, line: Optional[int] = None
    ) -> FrozenSet[str]:
        """The kinds of value ``node`` may evaluate to ({'str'}, {'int', 'unknown'}, ...); ``line``:
        where it is read, for a node parsed apart from the file (else the node's own line)."""
        if depth > 4:
            return frozenset({UNKNOWN})
        if isinstance(node, ast.Constant):
            return frozenset({_constant_kind(node.value)})
        if isinstance(node, ast.JoinedStr):
            return frozenset({"str"})
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
            left = self.value_kinds(node.left, scope, depth + 1, line)
            return frozenset({"str"}) if left == {"str"} else frozenset({UNKNOWN})
        if isinstance(node, ast.IfExp):
            return self.value_kinds(node.body, scope, depth + 1, line) | self.value_kinds(
                node.orelse, scope, depth + 1, line
            )
        if isinstance(node, ast.Call):
            callee = dotted(node.func) or ""
            if self.returns.get(callee, UNKNOWN) != UNKNOWN and callee not in self.imports:
                return frozenset({self.returns[callee]})  # get_device_name() -> str
            return frozenset({_call_kind(node, self.qualified(callee), callee.split(".")[0] in self.imports)})
        if isinstance(node, ast.Attribute) and node.attr == "type":
            if self.value_kinds(node.value, scope, depth + 1, line) == {"device"}:
                return frozenset({"str"})  # torch.device(...).type: 'cuda', 'cpu', ...
        if _is_dtype_key(node):
            return frozenset({"dtype"})  # inp["dtype"]: ColossalAI's fp8 all-gather metadata
        name = dotted(node)
        if name is None and isinstance(node, ast.Attribute) and node.attr == "device":
            return frozenset({"device"})  # next(model.parameters()).device: a torch.device
        if name is None:
            return frozenset({UNKNOWN})
        if _is_dtype_name(self.qualified(name)):
            return frozenset({"dtype"})
        if "." in name:
            return self._attribute_kinds(name, depth)
        return self._name_kinds(
            name, scope, depth, line if line is not None else getattr(node, "lineno", None)
        )

    def _name_kinds(
        self, name: str, scope: Optional[ScopeFacts], depth: int, line: Optional[int] = None
    ) -> FrozenSet[str]:
        reaching = self._reaching_kinds(name, scope, line, depth) if scope and line else None
        if reaching is not None:
            return reaching
        while scope is not None:
            if name in scope.opaque:
                return frozenset({UNKNOWN})
            if name in scope.bindings:
                return self._kinds_of(scope.bindings[name], depth)
            scope = scope.parent
        if name in BUILTIN_DTYPES and name not in self.imports:
            return frozenset({"dtype"})  # .to(float): Python's type, read by torch as a dtype
        return frozenset({UNKNOWN})

    def _attribute_kinds(self, name: str, depth: int) -> FrozenSet[str]:
        head, _, attr = name.rpartition(".")
        if head in self.namespaces:  # and whatever the file assigns to the option afterwards
            kinds = {self.argparse_dests.get(attr, UNKNOWN)} | (
                {UNKNOWN} if name in self.opaque_attributes else set()
            )
            return frozenset(kinds | self._kinds_of(self.attributes.get(name, []), depth))
        if name in self.opaque_attributes:
            return frozenset({UNKNOWN})
        if name in self.attributes:
            return self._kinds_of(self.attributes[name], depth)
        if attr == "device":
            return frozenset({"device"})  # tensor.device / module.device: a torch.device
        if attr == "grad":
            return frozenset({"tensor"})  # a parameter's gradient (or None): timm's Adafactor
        return frozenset({UNKNOWN})

    def _reaching_kinds(
        self, name: str, scope: ScopeFacts, line: int, depth: int
    ) -> Optional[FrozenSet[str]]:
        """The kinds of the bindings of ``name`` that may reach ``line`` in ``scope``, when a
        statement of the function's body binds it before (``device = torch.device(device)`` hides
        the parameter); None where no such statement decides."""
        before = [(end, value) for end, value in scope.straight.get(name, ()) if end < line]
        if not before:
            return None
        last_end, last_value = max(before, key=lambda item: item[0])
        if any(last_end < at < line for at in scope.opaque_at.get(name, ())):
            return frozenset({UNKNOWN})  # a loop or a with rebinds it in between
        later = [
            (value, where)
            for value, where in scope.bindings.get(name, ())
            if last_end < getattr(value, "lineno", 0) < line
        ]
        return self._kinds_of([(last_value, scope)] + later, depth)

    def _kinds_of(self, values: List[tuple], depth: int) -> FrozenSet[str]:
        kinds: Set[str] = set()
        for value, scope in values:
            kinds |= self.value_kinds(value, scope, depth + 1)
        return frozenset(kinds)

    def may_be_int(self, source: str, line: int = 0) -> bool:
        """Whether the expression ``source`` (a device argument at ``line``) may be an int."""
        return self.is_int(source, line) is not False

    def is_int(self, source: str, line: int = 0) -> Optional[bool]:
        """Whether the expression ``source`` at ``line`` is an int: True (always), False (never),
        None (it may be)."""
        if line and self.in_kernel(line):
            return False  # a kernel's .to(x) casts to a dtype (tl.float32); it never moves
        kinds = self.kinds_of(source, line)
        if kinds <= NOT_INT:
            return False
        return True if kinds == {"int"} else None

    def in_kernel(self, line: int) -> bool:
        """Whether ``line`` is inside a function that a kernel compiler traces (KERNEL_DECORATORS:
        ``@triton.jit``, ``@triton.autotune``, ``@triton.heuristics``, ColossalAI's kernels;
        ``@cute.jit``, ``@cute.kernel``)."""
        scope: Optional[ScopeFacts] = self.scope_at(line)
        while scope is not None:
            if any(self.qualified(name) in KERNEL_DECORATORS for name in scope.decorators):
                return True
            scope = scope.parent
        return False

    def kinds_of(self, source: str, line: int = 0) -> FrozenSet[str]:
        """The kinds of value the expression ``source`` at ``line`` may have."""
        try:  # in parentheses: an argument may span lines ("cuda" if ...\n else "cpu")
            node = ast.parse(f"(\n{source.strip()}\n)", mode="eval").body
        except SyntaxError:
            return frozenset({UNKNOWN})
        return self.value_kinds(node, self.scope_at(line), line=line or None)


def _note_straight(statement: ast.stmt, scope: ScopeFacts) -> None:
    """An assignment that is a statement of a function's body binds its plain names for every
    line after it."""
    if not isinstance(statement, ast.Assign):
        return
    end = getattr(statement, "end_lineno", None) or statement.lineno
    for target in statement.targets:
        if isinstance(target, ast.Name):
            scope.straight[target.id].append((end, statement.value))


def _is_call_to(node: ast.AST, method: str) -> bool:
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method


def _constant_kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "str"
    if value is None:
        return "none"
    return UNKNOWN


def _call_kind(call: ast.Call, qualified: str, imported: bool) -> str:
    """The kind of value a call returns, from its name resolved through the file's imports;
    ``imported``: the callee is reached through an import (a function, not a method of a value)."""
    head, _, last = qualified.rpartition(".")
    method = call.func.attr if isinstance(call.func, ast.Attribute) and not imported else ""
    if method == "format" and isinstance(call.func.value, ast.Constant):
        return "str"
    if method in TENSOR_METHODS:
        return "tensor"
    if method in STR_METHODS:
        return "str"
    if qualified == "str":
        return "str"
    if qualified in INT_FUNCTIONS:
        return "int"
    if last in DEVICE_FACTORIES and _is_torch(head):
        return "device"
    if last in TENSOR_FACTORIES and _is_torch(head):
        return "tensor"
    if last.endswith("_dtype"):  # get_default_dtype(), get_parameter_dtype(model): as the triggers say
        return "dtype"
    return UNKNOWN


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def _is_dtype_key(node: ast.AST) -> bool:
    """``x["dtype"]``, ``meta["out_dtype"]``: an item under a key that names a dtype."""
    if not isinstance(node, ast.Subscript):
        return False
    key = node.slice
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_dtype_name(key.value)


def _decorator_name(decorator: ast.AST) -> str:
    """``triton.autotune`` for ``@triton.autotune(configs=...)`` as for ``@triton.autotune``."""
    return (dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)) or ""


def _is_dtype_name(qualified: str) -> bool:
    head, _, last = qualified.rpartition(".")
    if last == "dtype" or last.endswith("_dtype"):
        return True
    return _is_torch(head) and last in DTYPE_NAMES


def _annotation_kind(annotation: ast.AST) -> str:
    """'str', 'device' or 'tensor' when every alternative of the annotation is one (None
    allowed): ``str``, ``torch.device``, ``Optional[torch.device]``, ``Union[str, torch.device]``,
    ``torch.device | None``, ``torch.Tensor``, or the same written as a string."""
    kinds = {_annotation_part_kind(part) for part in _annotation_alternatives(annotation)} - {"none"}
    if len(kinds) == 1:
        return kinds.pop()
    return "device" if kinds and kinds <= {"str", "device"} else UNKNOWN


def _only_int(annotation: ast.AST) -> bool:
    """The annotation is ``int`` itself (``Optional[int]``, ``int | None`` may be None)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.strip() == "int"
    return dotted(annotation) == "int"


def _annotation_alternatives(annotation: ast.AST) -> List[ast.AST]:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _annotation_alternatives(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return [annotation]
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _annotation_alternatives(annotation.left) + _annotation_alternatives(annotation.right)
    if isinstance(annotation, ast.Subscript):
        wrapper = (dotted(annotation.value) or "").rsplit(".", 1)[-1]
        inner = annotation.slice
        if wrapper in ("Optional", "Union"):
            elements = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return [alt for element in elements for alt in _annotation_alternatives(element)]
    return [annotation]


def _annotation_part_kind(part: ast.AST) -> str:
    if isinstance(part, ast.Constant) and part.value is None:
        return "none"
    name = dotted(part) or ""
    if name in ("str", "int"):
        return name
    if name == "device" or name.endswith(".device"):
        return "device"
    if name == "Tensor" or name.endswith(".Tensor"):  # .to(t) takes t's device and dtype
        return "tensor"
    return UNKNOWN


def _argparse_dest(call: ast.Call) -> Optional[str]:
    for keyword in call.keywords:
        if keyword.arg == "dest" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    longs = [o for o in options if o.startswith("--")]
    chosen = longs[0] if longs else (options[0] if options else None)
    if chosen is None:
        return None
    return chosen.lstrip("-").replace("-", "_")


def _always_given(default: Optional[ast.AST], required: Optional[ast.AST]) -> bool:
    """An option with a default argparse converts (an int, or a string), or a required one."""
    if isinstance(required, ast.Constant) and required.value is True:
        return True
    return (
        isinstance(default, ast.Constant)
        and isinstance(default.value, (int, str))
        and default.value is not True
    )


def _argparse_kind(call: ast.Call) -> str:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    action = keywords.get("action")
    if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
        return "bool"
    kind_of_type = keywords.get("type")
    default = keywords.get("default")
    if kind_of_type is not None:
        name = dotted(kind_of_type)
        if name == "int" and not _always_given(default, keywords.get("required")):
            return UNKNOWN  # None when the option is not given
        return {"int": "int", "str": "str"}.get(name or "", UNKNOWN)
    if (
        isinstance(default, ast.Constant)
        and isinstance(default.value, int)
        and not isinstance(default.value, bool)
    ):
        return "int"  # argparse keeps a non-string default as it is
    return "str"  # argparse hands over command-line values as strings
