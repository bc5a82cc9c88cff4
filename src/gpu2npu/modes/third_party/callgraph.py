"""The call graph of a library: which of its functions call which, across its modules.

Names are resolved with the stdlib ast, through each module's imports (absolute and relative),
re-exports in ``__init__.py``, class hierarchies inside the library, ``self``/``cls``/``super()``
and objects whose class is known from an assignment (``x = Block(...)``, ``self.head =
Head(...)``). Calling a class runs its ``__init__``; calling an instance runs its ``forward``
(``__call__``). Calls this cannot place but which may reach a library method (the method name
is one the library defines) are left for jedi (gpu2npu.modes.third_party.jedi_calls).

A function's name is its module's dotted name plus the class and function names
(``fdgan.model.FDGANModel.optimize_parameters``). Module names follow the package layout: a
file's module path starts below the highest directory without ``__init__.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from gpu2npu.source.imports import import_bindings
from gpu2npu.source.modules import module_names
from gpu2npu.source.names import dotted

MAX_ALIAS_HOPS = 16  # re-exports of re-exports; a cycle of aliases stops here
OPAQUE = "<opaque>"  # a local value no inference can tie to the library
LITERALS = (
    ast.Constant,
    ast.JoinedStr,
    ast.Dict,
    ast.List,
    ast.Set,
    ast.Tuple,
    ast.ListComp,
    ast.DictComp,
    ast.SetComp,
    ast.GeneratorExp,
)


@dataclass
class Function:
    name: str  # pkg.mod.Class.method
    file: str  # POSIX path relative to the library root
    start: int  # line span of the def, decorators excluded
    end: int
    cls: str = ""  # qualified name of the class whose method this is


@dataclass
class ClassInfo:
    name: str
    file: str
    line: int  # of the class statement
    bases: List[str] = field(default_factory=list)  # as resolved in the defining module
    methods: Dict[str, str] = field(default_factory=dict)  # method -> function name
    attributes: Dict[str, str] = field(default_factory=dict)  # self.attr -> dotted class it was built from


@dataclass
class Module:
    name: str
    file: str
    is_package: bool
    symbols: Dict[str, str] = field(default_factory=dict)  # top-level name -> dotted target
    tree: Optional[ast.Module] = None


@dataclass(frozen=True)
class OpenCall:
    """A call the ast could not place, kept for jedi: its position and the method name."""

    caller: str
    file: str
    line: int  # of the called name (1-based)
    column: int  # byte offset of the called name in its line
    name: str


@dataclass
class CallGraph:
    functions: Dict[str, Function] = field(default_factory=dict)
    classes: Dict[str, ClassInfo] = field(default_factory=dict)
    modules: Dict[str, Module] = field(default_factory=dict)
    edges: Dict[str, Set[str]] = field(default_factory=dict)  # caller -> callees
    open_calls: List[OpenCall] = field(default_factory=list)
    searched: Set[str] = field(
        default_factory=set
    )  # top-level modules of the -env paths: jedi may follow them

    def is_library_name(self, name: str) -> bool:
        """A module of the library, or a name inside one."""
        parts = name.split(".")
        return any(".".join(parts[:cut]) in self.modules for cut in range(len(parts), 0, -1))

    def add_edge(self, caller: str, callee: str) -> None:
        if callee in self.functions:
            self.edges.setdefault(caller, set()).add(callee)

    def aliases(self) -> Dict[str, List[str]]:
        """Public re-exports: ``pkg.Model`` for ``pkg.model.Model`` when pkg/__init__.py imports it."""
        found: Dict[str, List[str]] = {}
        for module in self.modules.values():
            if not module.is_package:
                continue
            for local, target in module.symbols.items():
                real = self.canonical(target)
                if real is not None and real != f"{module.name}.{local}":
                    found.setdefault(real, []).append(f"{module.name}.{local}")
        return {name: sorted(set(names)) for name, names in found.items()}

    # -- resolution -----------------------------------------------------------------------

    def canonical(self, name: str, hops: int = 0) -> Optional[str]:
        """The library function or class a dotted name denotes, through imports and re-exports."""
        if name in self.functions or name in self.classes:
            return name
        if hops > MAX_ALIAS_HOPS:
            return None
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            prefix, head, rest = ".".join(parts[:cut]), parts[cut], parts[cut + 1 :]
            if prefix in self.classes:
                method = self.method(prefix, head) if not rest else None
                return method
            module = self.modules.get(prefix)
            if module is not None:
                target = module.symbols.get(head)
                if target is None or target == f"{prefix}.{head}":
                    return None
                return self.canonical(".".join([target] + rest), hops + 1)
        return None

    def method(self, cls: str, name: str, skip_first: bool = False) -> Optional[str]:
        """``cls.name`` through the library part of the class hierarchy (``super()``: skip cls)."""
        for index, klass in enumerate(self.mro(cls)):
            if skip_first and index == 0:
                continue
            found = self.classes[klass].methods.get(name)
            if found is not None:
                return found
        return None

    def mro(self, cls: str) -> List[str]:
        """The class and its library bases, depth first, each once (cycles cannot loop)."""
        order: List[str] = []
        stack = [cls]
        while stack:
            klass = stack.pop(0)
            if klass in order or klass not in self.classes:
                continue
            order.append(klass)
            module = klass.rsplit(".", 1)[0]
            for base in self.classes[klass].bases:
                real = self.canonical(_in_module(self, module, base))
                if real in self.classes:
                    stack.append(real)
        return order

    def constructor(self, cls: str) -> Optional[str]:
        return self.method(cls, "__init__")

    def instance_call(self, cls: str) -> Optional[str]:
        return self.method(cls, "forward") or self.method(cls, "__call__")


def _in_module(graph: CallGraph, module: str, name: str) -> str:
    """A dotted name as written in ``module``, made absolute through its symbols."""
    head, _, rest = name.partition(".")
    target = graph.modules[module].symbols.get(head) if module in graph.modules else None
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target


# -- building ----------------------------------------------------------------------------


def build_graph(
    trees: Dict[str, ast.Module], packages: Set[str], searched: Iterable[str] = (), prefix: str = ""
) -> CallGraph:
    """The graph of the parsed files (rel path -> tree); two passes: definitions, then calls.
    ``searched``: top-level modules found on the -env paths; ``prefix``: see module_names."""
    graph = CallGraph(searched=set(searched))
    names = module_names(trees, packages, prefix)
    for rel, tree in sorted(trees.items()):
        module = Module(names[rel], rel, rel.endswith("__init__.py"), tree=tree)
        graph.modules[module.name] = module
        _Definitions(graph, module).visit_body(tree.body, module.name, "")
    method_names = {name.rsplit(".", 1)[1] for name in graph.functions}
    for module in graph.modules.values():
        for function_node, function in _functions_of(module.tree, module.name, graph):
            _Calls(graph, module, function, method_names).run(function_node)
    return graph


def _functions_of(tree: ast.Module, module: str, graph: CallGraph):
    """(node, Function) for the module's functions and methods, nested classes included."""

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node, graph.functions[f"{prefix}.{node.name}"]
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, f"{prefix}.{node.name}")
            elif isinstance(node, (ast.If, ast.Try)):
                yield from walk(_branches(node), prefix)

    yield from walk(tree.body, module)


def _branches(node) -> List[ast.stmt]:
    """Definitions under module-level ``if``/``try`` (optional imports, version switches)."""
    body = list(node.body) + list(node.orelse)
    for handler in getattr(node, "handlers", ()):
        body += handler.body
    return body + list(getattr(node, "finalbody", ()))


class _Definitions:
    """First pass: the module's symbols, functions, classes and their ``self.x = Cls()`` attributes."""

    def __init__(self, graph: CallGraph, module: Module):
        self.graph = graph
        self.module = module

    def visit_body(self, body, prefix: str, cls: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(node, prefix, cls)
            elif isinstance(node, ast.ClassDef):
                self._class(node, prefix)
            elif not cls and isinstance(node, (ast.Import, ast.ImportFrom)):
                self.module.symbols.update(import_bindings(node, self.module.name, self.module.is_package))
            elif not cls and isinstance(node, (ast.If, ast.Try)):
                self.visit_body(_branches(node), prefix, cls)

    def _function(self, node, prefix: str, cls: str) -> None:
        name = f"{prefix}.{node.name}"
        self.graph.functions[name] = Function(
            name, self.module.file, node.lineno, node.end_lineno or node.lineno, cls
        )
        if cls:
            info = self.graph.classes[cls]
            info.methods[node.name] = name
            info.attributes.update(_self_attributes(node))
        elif prefix == self.module.name:
            self.module.symbols[node.name] = name

    def _class(self, node: ast.ClassDef, prefix: str) -> None:
        name = f"{prefix}.{node.name}"
        bases = [text for text in (dotted(base) for base in node.bases) if text]
        self.graph.classes[name] = ClassInfo(name, self.module.file, node.lineno, bases)
        if prefix == self.module.name:
            self.module.symbols[node.name] = name
        self.visit_body(node.body, name, name)


def _self_attributes(function) -> Dict[str, str]:
    """``self.head = Head(...)`` in a method: the attribute is an instance of that class."""
    found = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            built = _constructed(node.value)
            for target in node.targets:
                if built and isinstance(target, ast.Attribute) and dotted(target.value) == "self":
                    found[target.attr] = built
    return found


def _constructed(value) -> Optional[str]:
    """The dotted callee building a value: ``Block(...)``, or the first branch of
    ``DropPath(p) if p else nn.Identity()``."""
    if isinstance(value, ast.IfExp):
        return _constructed(value.body) or _constructed(value.orelse)
    return dotted(value.func) if isinstance(value, ast.Call) else None


class _Calls(ast.NodeVisitor):
    """Second pass over one function (nested functions and lambdas count as its own code)."""

    def __init__(self, graph: CallGraph, module: Module, function: Function, method_names: Set[str]):
        self.graph = graph
        self.module = module
        self.function = function
        self.method_names = method_names
        # local name -> "instance:<class>", an imported dotted name, OPAQUE, or None (unknown)
        self.locals: Dict[str, Optional[str]] = {}

    def run(self, node) -> None:
        for argument in _parameters(node):
            self.locals[argument.arg] = self._parameter_kind(argument)
        for statement in node.body:
            self.visit(statement)

    def visit_FunctionDef(self, node) -> None:
        self.locals[node.name] = None
        for statement in node.body:
            self.visit(statement)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node) -> None:
        self.locals[node.name] = None
        self.generic_visit(node)

    def visit_Import(self, node) -> None:
        self.locals.update(import_bindings(node, self.module.name, self.module.is_package))

    visit_ImportFrom = visit_Import

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        kind = self._value_kind(node.value)
        for target in node.targets:
            for name in _names_bound(target):
                self.locals[name] = kind if isinstance(target, ast.Name) else None

    def _parameter_kind(self, argument: ast.arg) -> Optional[str]:
        """An annotated parameter may be typed (by us or jedi); a bare one cannot be, since
        jedi's search of every call site is switched off (too slow on big libraries)."""
        if argument.annotation is None:
            return OPAQUE
        text = dotted(argument.annotation)
        cls = self._class_named(text) if text else None
        return f"instance:{cls}" if cls else None

    def _value_kind(self, value) -> Optional[str]:
        """What a local bound to ``value`` is: a library instance, an OPAQUE value (a literal,
        or what a function outside the library returned), or unknown (None)."""
        if isinstance(value, LITERALS):
            return OPAQUE
        if isinstance(value, ast.Name):
            return self.locals.get(value.id)
        if not isinstance(value, ast.Call):
            return None
        text = dotted(value.func)
        if text is None:
            return None
        cls = self._class_named(text)
        if cls is not None:
            return f"instance:{cls}"
        return OPAQUE if self._outside_library(text) else None

    def _outside_library(self, text: str) -> bool:
        """``torch.zeros``, ``np.load``: bound by an import to something the library does not define."""
        head, _, rest = text.partition(".")
        target = self.locals.get(head) if head in self.locals else self.module.symbols.get(head)
        if target is None or target == OPAQUE or target.startswith("instance:"):
            return False
        if target.split(".")[0] in self.graph.searched:
            return False  # code on an -env path may return the library's objects; jedi follows it
        return self.graph.canonical(
            f"{target}.{rest}" if rest else target
        ) is None and not self.graph.is_library_name(target)

    def visit_For(self, node) -> None:
        for name in _names_bound(node.target):
            self.locals[name] = OPAQUE  # an element of a container: beyond what jedi types cheaply
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        callees = self._callees(node.func)
        if callees is None:
            self._leave_open(node.func)
            return
        for callee in callees:
            self.graph.add_edge(self.function.name, callee)

    # -- what a call expression reaches --------------------------------------------------

    def _callees(self, func) -> Optional[List[str]]:
        """Library functions the call runs; [] when it surely reaches none; None: unknown."""
        if isinstance(func, ast.Attribute) and _is_super_call(func.value):
            found = (
                self.graph.method(self.function.cls, func.attr, skip_first=True)
                if self.function.cls
                else None
            )
            return [found] if found else []
        if isinstance(func, ast.Call):  # Block(...)(x): the new instance is called
            built = self._built_class(func)
            found = self.graph.instance_call(built) if built else None
            return [found] if found else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):  # Block(...).reset()
            kind = self._value_kind(func.value)
            if kind == OPAQUE:
                return []
            found = self.graph.method(kind[len("instance:") :], func.attr) if kind else None
            return [found] if found else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, LITERALS):  # "{}".format()
            return []
        text = dotted(func)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head in ("self", "cls") and self.function.cls:
            return self._on_self(rest)
        if head in self.locals:
            return self._on_local(head, rest)
        target = self.module.symbols.get(head)
        if target is None:
            return None if rest else []  # an attribute of an unknown object; or a builtin
        return self._reached(f"{target}.{rest}" if rest else target)

    def _on_self(self, rest: str) -> Optional[List[str]]:
        """``self.method()``, ``self.block(x)`` (its forward) and ``self.block.method()``."""
        first, _, more = rest.partition(".")
        if not first or "." in more:
            return None
        cls = self.function.cls
        if not more:
            found = self.graph.method(cls, first)
            if found:
                return [found]
        built = self._attribute_class(cls, first)
        if built is None:
            return None
        if built == OPAQUE:  # self.norm = nn.LayerNorm(...): not the library's
            return []
        found = self.graph.method(built, more) if more else self.graph.instance_call(built)
        return [found] if found else []

    def _on_local(self, head: str, rest: str) -> Optional[List[str]]:
        value = self.locals[head]
        if value is None:
            return None
        if value == OPAQUE:
            return []
        if not value.startswith("instance:"):
            return self._reached(f"{value}.{rest}" if rest else value)  # a local import
        cls = value[len("instance:") :]
        if not rest:
            found = self.graph.instance_call(cls)
        elif "." not in rest:
            found = self.graph.method(cls, rest)
        else:
            return None
        return [found] if found else []

    def _reached(self, name: str) -> List[str]:
        real = self.graph.canonical(name)
        if real is None:
            return []  # outside the library (torch, numpy, ...): judged as an API, not an edge
        if real in self.graph.classes:
            found = self.graph.constructor(real)
            return [found] if found else []
        return [real]

    def _built_class(self, call: ast.Call) -> Optional[str]:
        text = dotted(call.func)
        return self._class_named(text) if text else None

    def _class_named(self, text: str) -> Optional[str]:
        head, _, rest = text.partition(".")
        if head in self.locals:
            value = self.locals[head]
            if value is None or value == OPAQUE or value.startswith("instance:"):
                return None
            text = f"{value}.{rest}" if rest else value
        else:
            target = self.module.symbols.get(head)
            if target is None:
                return None
            text = f"{target}.{rest}" if rest else target
        real = self.graph.canonical(text)
        return real if real in self.graph.classes else None

    def _attribute_class(self, cls: str, attribute: str) -> Optional[str]:
        for klass in self.graph.mro(cls):
            built = self.graph.classes[klass].attributes.get(attribute)
            if built is not None:
                module = klass.rsplit(".", 1)[0]
                while module not in self.graph.modules and "." in module:
                    module = module.rsplit(".", 1)[0]
                absolute = _in_module(self.graph, module, built)
                real = self.graph.canonical(absolute)
                if real in self.graph.classes:
                    return real
                return None if self.graph.is_library_name(absolute) or absolute == built else OPAQUE
        return None

    def _leave_open(self, func) -> None:
        """Keep an unplaced call for jedi when it may reach a library function."""
        if (
            isinstance(func, ast.Attribute)
            and func.attr in self.method_names
            and func.end_lineno == func.lineno
        ):
            column = (func.end_col_offset or 0) - len(func.attr.encode("utf-8"))
            self.graph.open_calls.append(
                OpenCall(self.function.name, self.function.file, func.lineno, column, func.attr)
            )
        elif isinstance(func, ast.Name) and func.id in self.method_names:
            self.graph.open_calls.append(
                OpenCall(self.function.name, self.function.file, func.lineno, func.col_offset, func.id)
            )


def _parameters(node) -> List[ast.arg]:
    arguments = node.args
    every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    return every + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]


def _names_bound(target) -> List[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _names_bound(element)]
    if isinstance(target, ast.Starred):
        return _names_bound(target.value)
    return []


def _is_super_call(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def function_spans(graph: CallGraph) -> Dict[str, List[Tuple[int, int, str]]]:
    """Per file: (start, end, function) sorted so that the innermost def wins a lookup."""
    spans: Dict[str, List[Tuple[int, int, str]]] = {}
    for function in graph.functions.values():
        spans.setdefault(function.file, []).append((function.start, function.end, function.name))
    for items in spans.values():
        items.sort(key=lambda item: (item[0], -item[1]))
    return spans


def enclosing_function(spans: List[Tuple[int, int, str]], line: int) -> Optional[str]:
    """The innermost function or method whose def spans ``line`` (None: module-level code)."""
    found = None
    for start, end, name in spans:
        if start > line:
            break
        if line <= end:
            found = name
    return found
