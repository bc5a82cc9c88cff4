"""NPU-affine replacements in a project (``gpu2npu analyse -m affinity_apis``).

The facts are data: affinity.yaml beside this module, generated from kb/affinity_api_map.csv by
tools/gen_kb.py, read once per process. Names are resolved with the stdlib ast through each
file's imports (relative ones included) and the project's own module paths; jedi is not used.

Pass 1, ``scan_module`` (one per parsed file), finds what needs only that file: calls of an
API with a replacement, the boolean-mask assignment special, the definitions that match an
entry, the file's module-level imports (re-exports) and the calls that may reach a project
definition. Pass 2, ``project_rows``, resolves those calls against the matching definitions of
the whole project and returns every row, sorted and without duplicates.

The special (``subscript_assign``: ``input[condition] = value`` ->
npu_fast_condition_index_put) is an assignment ``x[index] = value`` (x a name or an attribute
chain such as ``self.buf``, the value any expression) whose index is plausibly a boolean
condition tensor, in a file that imports torch or a torch submodule somewhere. The index is a
condition when it is

* a comparison with ==, !=, <, <=, > or >= (``x[x > 0] = 0``; ``in`` and ``is`` give Python
  bools and do not count);
* a call of a boolean-producing torch function, resolved through the file's imports
  (``torch.isnan``, ``t.eq`` after ``import torch as t``, ``isin`` after ``from torch import
  isin``; see _CONDITION_FUNCTIONS), of such a tensor method on a value that is not an import
  (``x.gt(0)``, ``m.bool()``, ``m.logical_not()``; _CONDITION_METHODS), ``.to(torch.bool)``
  / ``.type(torch.bool)``, or a torch function or method given ``dtype=torch.bool``;
* ``~c`` or ``not c``, ``c & d``, ``c | d`` or ``c ^ d`` with at least one condition operand
  (a boolean mask combined with another mask), ``c and d`` / ``c or d`` with only condition
  operands, or ``(m := c)``;
* a name whose last binding before the assignment, in source order and in the same function,
  class body or module scope, was an assignment (``=``, an annotated one, ``:=``, or ``&=``
  / ``|=`` / ``^=`` as above) of a condition. Any other binding (a parameter, a loop or
  ``with`` target, tuple unpacking, an import, def, class, ``except ... as``, ``del``) makes
  it a plain value again, and names of enclosing scopes are not looked at.

So dict-style ``cache[key] = value`` (key a parameter, loop variable, string, ...) is not
reported. Control flow is not followed: the last binding in source order decides.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import yaml

from gpu2npu.errors import RuleFileError
from gpu2npu.source.binder import ScopedReader
from gpu2npu.source.imports import STAR
from gpu2npu.source.names import dotted
from gpu2npu.source.scopes import LOCAL, ImportBinding

AFFINITY_FILE = Path(__file__).resolve().parent / "affinity.yaml"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The fields each kind of entry carries besides match, type, replacement, versions and source.
_MATCH_FIELDS = {
    "call": ("api",),
    "function": ("name",),  # params optional: absent = any parameter list
    "class": ("name", "base", "init", "forward"),
    "class_suffix": ("suffix",),
    "subscript_assign": ("call_name",),
}
_COMMON_FIELDS = ("match", "type", "replacement", "versions", "source")
_LIST_FIELDS = frozenset({"versions", "params", "init", "forward"})  # lists of names; the rest are strings
# Re-export and star-import hops followed to reach a definition (a guard against cycles).
_MAX_HOPS = 50
# Torch functions (torch.<name>, torch.Tensor.<name>) and tensor methods (value.<name>()) whose
# result is a boolean tensor: a call of one is a condition index for the special.
_BOOLEAN_RESULTS = frozenset({
    "eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "isclose", "signbit",
    "logical_and", "logical_or", "logical_not", "logical_xor",
})  # fmt: skip
_CONDITION_FUNCTIONS = _BOOLEAN_RESULTS | {"isin"}  # torch.isin has no tensor method
_CONDITION_METHODS = _BOOLEAN_RESULTS | {"bool"}  # x.bool(); torch.bool is a dtype, not a function
_CONDITION_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_MASK_OPERATORS = (ast.BitAnd, ast.BitOr, ast.BitXor)  # mask & other: a mask when one side is
_TORCH_BOOL = "torch.bool"
# Some byte sequence an assignment ``a[b] = c`` must contain: a closing bracket (or the
# parenthesis of a parenthesised target), blanks or line continuations, then '=' but not '=='.
_SUBSCRIPT_ASSIGN_BYTES = rb"[\])][ \t\r\n\\]*=(?!=)"


@dataclass(frozen=True)
class Entry:
    match: str  # call | function | class | class_suffix | subscript_assign
    type: str  # the report's Api Type: torch, function, class, pattern, special
    replacement: str
    versions: Tuple[str, ...]
    source: str
    api: str = ""  # call
    name: str = ""  # function, class
    params: Optional[Tuple[str, ...]] = None  # function; None: any parameter list
    base: str = ""  # class
    init: Tuple[str, ...] = ()  # class: its own __init__'s parameters, () when it defines none
    forward: Tuple[str, ...] = ()
    suffix: str = ""  # class_suffix
    call_name: str = ""  # subscript_assign: the Api Call Name of its rows


@dataclass(frozen=True, order=True)
class AffinityRow:
    file: str
    start_line: int
    end_line: int
    api_type: str
    call_name: str
    replacement: str


@dataclass(frozen=True)
class Definition:
    """A def or class of the project that matches an entry."""

    qualified: str  # 'models.layers.DropPath'
    file: str
    start_line: int
    end_line: int
    entry: Entry

    def row(self, file: str, start: int, end: int) -> AffinityRow:
        return AffinityRow(file, start, end, self.entry.type, self.qualified, self.entry.replacement)


@dataclass(frozen=True)
class ProjectCall:
    """A call that may reach a project definition: the names its callee may stand for."""

    file: str
    start_line: int
    end_line: int
    name: str  # qualified through the file's imports, or '<module>.<name>' for a global not yet bound


@dataclass
class ModuleScan:
    rows: List[AffinityRow] = field(default_factory=list)  # rows that need only this file
    definitions: List[Definition] = field(default_factory=list)
    aliases: Dict[str, str] = field(default_factory=dict)  # 'models.DropPath' -> 'models.layers.DropPath'
    stars: Dict[str, List[str]] = field(default_factory=dict)  # module -> modules it star-imports
    calls: List[ProjectCall] = field(default_factory=list)


# -- the entries of one target version ---------------------------------------------------------


@dataclass(frozen=True)
class AffinityIndex:
    calls: Dict[str, Tuple[Entry, ...]]  # api -> entries
    functions: Dict[str, Tuple[Entry, ...]]  # def name -> entries
    classes: Dict[str, Tuple[Entry, ...]]  # class name -> entries
    class_suffixes: Tuple[Entry, ...]
    specials: Tuple[Entry, ...]
    trigger: "re.Pattern[bytes]"  # a file without a match of this cannot give a row

    def may_match(self, data: bytes) -> bool:
        return self.trigger.search(data) is not None

    def may_name_a_definition(self, name: str) -> bool:
        return (
            name in self.functions
            or name in self.classes
            or any(name.endswith(e.suffix) for e in self.class_suffixes)
        )


def index_for_version(entries: Sequence[Entry], version: str) -> AffinityIndex:
    """The entries whose replacement exists in the torch_npu of ``version``, by what they match."""
    active = [entry for entry in entries if version in entry.versions]
    by_kind = {kind: [e for e in active if e.match == kind] for kind in _MATCH_FIELDS}
    calls, functions = _group(by_kind["call"], "api"), _group(by_kind["function"], "name")
    classes = _group(by_kind["class"], "name")
    words = {api.split(".", 1)[0] for api in calls} | set(functions) | set(classes)
    words |= {entry.suffix for entry in by_kind["class_suffix"]}
    alternatives = [re.escape(word.encode()) for word in sorted(words)]
    if by_kind["subscript_assign"]:
        alternatives.append(_SUBSCRIPT_ASSIGN_BYTES)
    trigger = re.compile(b"|".join(alternatives) if alternatives else rb"(?!)")  # (?!) never matches
    return AffinityIndex(
        calls, functions, classes, tuple(by_kind["class_suffix"]), tuple(by_kind["subscript_assign"]), trigger
    )


def _group(entries: Iterable[Entry], key: str) -> Dict[str, Tuple[Entry, ...]]:
    grouped: Dict[str, Tuple[Entry, ...]] = {}
    for entry in entries:
        grouped[getattr(entry, key)] = grouped.get(getattr(entry, key), ()) + (entry,)
    return grouped


# -- loading affinity.yaml ------------------------------------------------------------------------


@lru_cache(maxsize=1)
def load_affinity() -> Tuple[Entry, ...]:
    """The built-in entries, read and checked once per process."""
    return parse_affinity(AFFINITY_FILE)


def parse_affinity(path: Path) -> Tuple[Entry, ...]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RuleFileError(path, "", f"cannot read the affinity file ({exc})") from None
    if not isinstance(data, dict) or set(data) != {"entries"} or not isinstance(data["entries"], list):
        raise RuleFileError(path, "", "the top level must be a mapping with one key, entries, a list")
    return tuple(_entry(path, f"entries[{i}]", raw) for i, raw in enumerate(data["entries"]))


def _entry(path: Path, where: str, raw) -> Entry:
    if not isinstance(raw, dict) or raw.get("match") not in _MATCH_FIELDS:
        raise RuleFileError(
            path, where, f"must be a mapping whose match is one of {', '.join(_MATCH_FIELDS)}"
        )
    required = _COMMON_FIELDS + _MATCH_FIELDS[raw["match"]]
    allowed = set(required) | ({"params"} if raw["match"] == "function" else set())
    missing, unknown = sorted(set(required) - set(raw)), sorted(set(raw) - allowed)
    if missing:
        raise RuleFileError(path, where, f"missing field(s) {', '.join(missing)}")
    if unknown:
        raise RuleFileError(
            path, where, f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    values = {key: _value(path, f"{where}.{key}", key, value) for key, value in raw.items()}
    return Entry(**values)


def _value(path: Path, where: str, key: str, value):
    """Lists (versions, parameter names) become tuples of strings; other fields are strings."""
    if key in _LIST_FIELDS:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise RuleFileError(path, where, "must be a list of (quoted) strings")
        return tuple(value)
    if not isinstance(value, str) or not value:
        raise RuleFileError(path, where, "must be a non-empty (quoted) string")
    return value


# -- pass 1: one file ---------------------------------------------------------------------------


def scan_module(
    tree: ast.Module, rel: str, module: str, is_package: bool, index: AffinityIndex
) -> ModuleScan:
    scanner = _Scanner(rel, module, is_package, index)
    scanner.visit(tree)
    if scanner.imports_torch:  # the special is a torch idiom: nothing for a file without torch
        scanner.scan.rows.extend(scanner.special_rows)
    return scanner.scan


def parameter_names(arguments: ast.arguments) -> Tuple[str, ...]:
    """Every parameter name in order; *args and **kwargs keep their stars, so a def taking
    ``*groups`` never equals one taking ``groups``."""
    names = [a.arg for a in arguments.posonlyargs + arguments.args]
    if arguments.vararg:
        names.append("*" + arguments.vararg.arg)
    names += [a.arg for a in arguments.kwonlyargs]
    if arguments.kwarg:
        names.append("**" + arguments.kwarg.arg)
    return tuple(names)


def own_method_parameters(node: ast.ClassDef, method: str) -> Tuple[str, ...]:
    """The parameters of a method the class body defines itself (the last definition wins); ()
    when it defines none."""
    found: Tuple[str, ...] = ()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
            found = parameter_names(item.args)
    return found


def base_matches(wanted: str, bases: Sequence[Tuple[str, str]]) -> bool:
    """A base resolved through the imports must equal the wanted one; an unresolved base
    compares by its text as a dotted suffix ('Module', 'nn.Module' for 'torch.nn.Module')."""
    for resolved, text in bases:
        if resolved == wanted or (not resolved and text and ("." + wanted).endswith("." + text)):
            return True
    return False


def subscript_indexes(node: ast.Assign) -> List[ast.AST]:
    """The index of each target ``x[index]`` / ``a.b[index]`` of an assignment (a tuple index,
    ``x[m, 0]``, is not a plain mask and is left out)."""
    return [
        t.slice
        for t in node.targets
        if isinstance(t, ast.Subscript)
        and dotted(t.value)
        and not isinstance(t.slice, (ast.Tuple, ast.Slice))
    ]


def _span(node: ast.AST) -> Tuple[int, int]:
    return node.lineno, getattr(node, "end_lineno", None) or node.lineno


class _Scanner(ScopedReader):
    """One walk over a module, keeping an import table scope by scope (as the rewrite pass
    does). A def or class binds its name to its own qualified name, so calls of it in the same
    module resolve like imported ones."""

    def __init__(self, rel: str, module: str, is_package: bool, index: AffinityIndex):
        super().__init__()
        self.rel, self.module, self.is_package, self.index = rel, module, is_package, index
        # Per scope (parallel to self.scopes): the names whose last binding so far in that scope
        # was an assignment of a condition (see the module docstring).
        self.conditions: List[set] = [set()]
        self.path = [module] if module else []  # qualified name of the enclosing def or class
        self.scan = ModuleScan()
        self.special_rows: List[AffinityRow] = []  # kept only when the file imports torch
        self.imports_torch = False

    # -- imports ------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        self._read_import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._read_import(node)

    def _read_import(self, node: ast.AST) -> None:
        for name in self.bind_imports(node, self.module, self.is_package):
            if name.local == STAR:
                self._note_import(name.qualified or "")
                if name.qualified and self.scopes.at_module_level:
                    self.scan.stars.setdefault(self.module, []).append(name.qualified)
            elif name.qualified:
                self._note_import(name.qualified)
                if self.scopes.at_module_level:
                    self.scan.aliases[self._global(name.local)] = name.qualified

    def _note_import(self, qualified: str) -> None:
        if qualified == "torch" or qualified.startswith("torch."):
            self.imports_torch = True

    def _global(self, name: str) -> str:
        return f"{self.module}.{name}" if self.module else name

    # -- definitions --------------------------------------------------------------------------

    def visit_FunctionDef(self, node) -> None:
        for expression in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expression)
        qualified = self._qualified_def(node.name)
        for entry in self.index.functions.get(node.name, ()):
            if entry.params is None or entry.params == parameter_names(node.args):
                self._add_definition(qualified, node, entry)
        self.bind_name(node.name, ImportBinding(qualified, qualified))
        self._enter("function", qualified)
        self.bind_arguments(node.args)
        for statement in node.body:
            self.visit(statement)
        self._leave()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(expression)
        qualified = self._qualified_def(node.name)
        for entry in self._class_entries(node):
            self._add_definition(qualified, node, entry)
        self.bind_name(node.name, ImportBinding(qualified, qualified))
        self._enter("class", qualified)
        for statement in node.body:
            self.visit(statement)
        self._leave()

    def _class_entries(self, node: ast.ClassDef) -> List[Entry]:
        found = [entry for entry in self.index.class_suffixes if node.name.endswith(entry.suffix)]
        candidates = self.index.classes.get(node.name, ())
        if candidates:
            bases = [(self.qualified(base), dotted(base) or "") for base in node.bases]
            init, forward = own_method_parameters(node, "__init__"), own_method_parameters(node, "forward")
            found += [
                e
                for e in candidates
                if e.init == init and e.forward == forward and base_matches(e.base, bases)
            ]
        return found

    def _qualified_def(self, name: str) -> str:
        return ".".join(self.path + [name])

    def _add_definition(self, qualified: str, node: ast.AST, entry: Entry) -> None:
        self.scan.definitions.append(Definition(qualified, self.rel, *_span(node), entry))

    def _enter(self, kind: str, qualified: str) -> None:
        self.push_scope(kind)
        self.path = qualified.split(".")

    def _leave(self) -> None:
        self.pop_scope()
        self.path = self.path[:-1]

    def push_scope(self, kind: str) -> None:
        self.scopes.push(kind)
        self.conditions.append(set())

    def pop_scope(self) -> None:
        self.scopes.pop()
        self.conditions.pop()

    def bind_name(self, name: str, binding=LOCAL, condition: bool = False) -> None:
        """Every binding goes through here, so that a rebinding ends a name's condition status."""
        self.scopes.bind(name, binding)
        if condition:
            self.conditions[-1].add(name)
        else:
            self.conditions[-1].discard(name)

    # -- other bindings -------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.index.specials and any(self.is_condition(i) for i in subscript_indexes(node)):
            for entry in self.index.specials:
                self.special_rows.append(
                    AffinityRow(self.rel, *_span(node), entry.type, entry.call_name, entry.replacement)
                )
        self.visit(node.value)
        condition = self.is_condition(node.value)  # before the targets are bound: m = ~m
        for target in node.targets:
            self._bind_target(target, condition)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self._bind_target(node.target, node.value is not None and self.is_condition(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        condition = isinstance(node.op, _MASK_OPERATORS) and (
            self.is_condition(node.target) or self.is_condition(node.value)
        )
        self._bind_target(node.target, condition)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind_target(node.target, self.is_condition(node.value))

    def visit_Delete(self, node: ast.Delete) -> None:
        pending = list(node.targets)
        while pending:
            target = pending.pop()
            if isinstance(target, ast.Name):
                self.conditions[-1].discard(target.id)  # del mask: no longer a condition
            elif isinstance(target, (ast.Tuple, ast.List)):
                pending.extend(target.elts)
            else:
                self.visit(target)

    def bind_target(self, target: ast.AST) -> None:
        self._bind_target(target)

    def _bind_target(self, target: ast.AST, condition: bool = False) -> None:
        """Bind the names of a target; ``condition``: a lone name gets a condition's value."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value)
        elif isinstance(target, ast.Name):
            self.bind_name(target.id, condition=condition)
        else:
            self.visit(target)  # a.b = ..., a[i] = ...: the parts are loads

    # -- boolean conditions (the special) ----------------------------------------------------

    def is_condition(self, node: ast.AST) -> bool:
        """Whether an expression is plausibly a boolean condition tensor (module docstring)."""
        if isinstance(node, ast.Compare):
            return all(isinstance(op, _CONDITION_COMPARISONS) for op in node.ops)
        if isinstance(node, ast.Name):
            return node.id in self.conditions[-1]
        if isinstance(node, ast.Call):
            return self._is_condition_call(node)
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, (ast.Invert, ast.Not)) and self.is_condition(node.operand)
        if isinstance(node, ast.BinOp):
            return isinstance(node.op, _MASK_OPERATORS) and (
                self.is_condition(node.left) or self.is_condition(node.right)
            )
        if isinstance(node, ast.BoolOp):
            return all(self.is_condition(value) for value in node.values)
        if isinstance(node, ast.NamedExpr):
            return self.is_condition(node.value)
        return False

    def _is_condition_call(self, node: ast.Call) -> bool:
        func = node.func
        qualified = self.qualified(func)
        if qualified:  # through an import: torch.<name> or torch.Tensor.<name>, or nothing
            module = qualified.rsplit(".", 1)[0]
            if module not in ("torch", "torch.Tensor"):
                return False
            name, is_torch = qualified.rsplit(".", 1)[-1], True
        elif isinstance(func, ast.Attribute):  # a method of some value: x.gt(0), (a - b).abs().lt(e)
            name, is_torch = func.attr, False
        else:
            return False  # a local function, a builtin
        if name in (_CONDITION_FUNCTIONS if is_torch else _CONDITION_METHODS):
            return True
        if any(k.arg == "dtype" and self.qualified(k.value) == _TORCH_BOOL for k in node.keywords):
            return True
        return (
            not is_torch
            and name in ("to", "type")
            and bool(node.args)
            and self.qualified(node.args[0]) == _TORCH_BOOL
        )

    # -- calls ----------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        name = self._callee_name(node.func)
        entries = self.index.calls.get(name, ())
        for entry in entries:
            self._add_row(node, entry.type, name, entry.replacement)
        if name and not entries and self.index.may_name_a_definition(name.rsplit(".", 1)[-1]):
            self.scan.calls.append(ProjectCall(self.rel, *_span(node), name))
        self.generic_visit(node)

    def _callee_name(self, func: ast.AST) -> str:
        """The callee's qualified name; a bare name bound nowhere yet is taken as a global of
        this module (defined or imported further down, or brought in by a star import)."""
        qualified = self.qualified(func)
        if not qualified and isinstance(func, ast.Name) and self.scopes.lookup(func.id) is None:
            return self._global(func.id)
        return qualified

    def _add_row(self, node: ast.AST, api_type: str, call_name: str, replacement: str) -> None:
        self.scan.rows.append(AffinityRow(self.rel, *_span(node), api_type, call_name, replacement))


# -- pass 2: the project --------------------------------------------------------------------


class _DottedTable:
    """Values by dotted name: the exact name, else the shortest key that ends with it at a dot
    (a definition 'src.models.layers.DropPath' for an import of 'models.layers.DropPath' when
    the input root sits above the import root)."""

    def __init__(self, items: Iterable[Tuple[str, object]]):
        self.exact: Dict[str, List[object]] = {}
        for key, value in items:
            self.exact.setdefault(key, []).append(value)
        self.by_last: Dict[str, List[str]] = {}
        for key in sorted(self.exact, key=lambda k: (len(k), k)):
            self.by_last.setdefault(key.rsplit(".", 1)[-1], []).append(key)

    def find(self, name: str) -> List[object]:
        if name in self.exact:
            return self.exact[name]
        for key in self.by_last.get(name.rsplit(".", 1)[-1], ()):
            if key.endswith("." + name):
                return self.exact[key]
        return []


@dataclass
class _Project:
    definitions: _DottedTable
    aliases: _DottedTable
    stars: _DottedTable

    def resolve(self, name: str) -> List[Definition]:
        """The matching definitions a called name refers to, following re-exports
        (``from .layers import DropPath`` in models/__init__.py) and star imports."""
        pending, seen = [name], set()
        while pending and len(seen) < _MAX_HOPS:
            current = pending.pop(0)
            if current in seen:
                continue
            seen.add(current)
            found = self.definitions.find(current)
            if found:
                return found
            pending.extend(self._redirects(current))
        return []

    def _redirects(self, name: str) -> List[str]:
        """Names ``name`` may stand for: an alias bound to it or to one of its prefixes, and
        for 'module.x' the x of each module that module star-imports."""
        parts = name.split(".")
        redirects = []
        for cut in range(len(parts), 0, -1):
            rest = parts[cut:]
            redirects += [".".join([target, *rest]) for target in self.aliases.find(".".join(parts[:cut]))]
        if len(parts) > 1:
            redirects += [
                f"{source}.{parts[-1]}"
                for sources in self.stars.find(".".join(parts[:-1]))
                for source in sources
            ]
        return redirects


def project_rows(scans: Sequence[ModuleScan]) -> List[AffinityRow]:
    """Every row of the project: the files' own rows, one per matching definition, and one per
    call resolved to a matching definition; sorted, without duplicates."""
    project = _Project(
        definitions=_DottedTable((d.qualified, d) for scan in scans for d in scan.definitions),
        aliases=_DottedTable(item for scan in scans for item in scan.aliases.items()),
        stars=_DottedTable(item for scan in scans for item in scan.stars.items()),
    )
    rows = {row for scan in scans for row in scan.rows}
    rows |= {d.row(d.file, d.start_line, d.end_line) for scan in scans for d in scan.definitions}
    for scan in scans:
        for call in scan.calls:
            rows |= {d.row(call.file, call.start_line, call.end_line) for d in project.resolve(call.name)}
    return sorted(rows)
