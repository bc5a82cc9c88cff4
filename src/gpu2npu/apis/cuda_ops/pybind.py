"""The ops of a ``PYBIND11_MODULE`` block: ``m.def`` functions (also on submodules) and
``py::class_`` chains (methods, static methods, constructors), with their argument bounds
(``py::arg`` items with defaults make arguments optional)."""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from gpu2npu.apis.cuda_ops.arity import Arity, arity_bounds, callable_arity
from gpu2npu.apis.cuda_ops.cpp import CppText
from gpu2npu.apis.cuda_ops.model import CudaOp

PYBIND_MACROS = frozenset({"PYBIND11_MODULE"})


class _ClassBinding(NamedTuple):
    name: str  # the Python name, with any submodule prefix
    cpp_type: str  # last identifier of the bound C++ type, to recognise `self` parameters


class PybindScanner:
    """The ops of one PYBIND11_MODULE block."""

    def __init__(self, cpp: CppText, file: str, module_var: str, cpp_module: str):
        self.cpp, self.file, self.cpp_module = cpp, file, cpp_module
        self.submodules: Dict[str, str] = {module_var: ""}  # variable -> name prefix ('' or 'sub.')
        self.classes: Dict[str, _ClassBinding] = {}  # variable -> class
        self.ops: List[CudaOp] = []

    def scan(self, start: int, end: int) -> List[CudaOp]:
        for statement in self.cpp.statements(start, end):
            self._statement(*statement)
        return self.ops

    def _statement(self, start: int, end: int) -> None:
        cpp = self.cpp
        equals = cpp.first_assignment(start, end)
        variable = cpp.tokens[equals - 1].text if equals is not None and cpp.is_id(equals - 1) else ""
        expression = equals + 1 if equals is not None else start
        binding, chain_start = self._class_expression(expression, end)
        if binding is not None:
            if variable:  # auto cls = py::class_<T>(m, "Name");
                self.classes[variable] = binding
            self._class_chain(binding, chain_start, end)
            return
        if not cpp.is_id(expression):
            return
        receiver = cpp.tokens[expression].text
        if receiver in self.classes:
            self._class_chain(self.classes[receiver], expression + 1, end)
        elif receiver in self.submodules:
            self._module_chain(self.submodules[receiver], expression + 1, end, variable)

    def _class_expression(self, start: int, end: int) -> Tuple[Optional[_ClassBinding], int]:
        """``py::class_<T, ...>(m, "Name")`` or ``py::class_<T> var(m, "Name")``: the class and
        where its .def chain starts. A declaration form registers its variable itself."""
        cpp = self.cpp
        names, after = cpp.qualified_name(start, end)
        if not names or names[-1] != "class_" or not cpp.is_op(after, "<"):
            return None, start
        template_close = cpp.template_end(after, end)
        if template_close is None:
            return None, start
        type_names, _ = cpp.qualified_name(after + 1, template_close)
        cpp_type = type_names[-1] if type_names else ""
        declared = ""
        paren = template_close + 1
        if cpp.is_id(paren):  # py::class_<T> cls(m, "Name");
            declared, paren = cpp.tokens[paren].text, paren + 1
        close = cpp.group_end(paren, end + 1) if cpp.is_op(paren, "(") else None
        if close is None:
            return None, start
        args = cpp.split(paren + 1, close)
        python_name = cpp.string_of(args[1]) if len(args) > 1 else None
        if python_name is None:
            return None, start
        scope = cpp.tokens[args[0][0]].text if args[0][1] - args[0][0] == 1 else ""
        binding = _ClassBinding(self.submodules.get(scope, "") + python_name, cpp_type)
        if declared:
            self.classes[declared] = binding
        return binding, close + 1

    def _module_chain(self, prefix: str, start: int, end: int, variable: str) -> None:
        for method, name_index, args_start, args_end in self.cpp.chain_calls(start, end):
            args = self.cpp.split(args_start, args_end)
            if method == "def":
                self._def(prefix, None, name_index, args)
            elif method == "def_submodule" and variable and args:
                sub = self.cpp.string_of(args[0])
                if sub:
                    self.submodules[variable] = f"{prefix}{sub}."

    def _class_chain(self, binding: _ClassBinding, start: int, end: int) -> None:
        for method, name_index, args_start, args_end in self.cpp.chain_calls(start, end):
            if method in ("def", "def_static"):
                owner = binding if method == "def" else binding._replace(cpp_type="")
                self._def("", owner, name_index, self.cpp.split(args_start, args_end))

    def _def(
        self, prefix: str, owner: Optional[_ClassBinding], name_index: int, args: List[Tuple[int, int]]
    ) -> None:
        """One ``.def(...)``: a function, a method (owner given) or a constructor (py::init)."""
        cpp = self.cpp
        if not args:
            return
        if owner and _is_init(cpp, args[0]):
            name, extras, as_method = owner.name, args[1:], False
            arity = _init_arity(cpp, args[0])
        else:
            python_name = cpp.string_of(args[0])
            if python_name is None:
                return  # operator overloads (py::self + py::self) and unreadable names
            name = f"{owner.name}.{python_name}" if owner else prefix + python_name
            arity = callable_arity(cpp, args[1], owner.cpp_type if owner else "") if len(args) > 1 else None
            extras, as_method = args[2:], owner is not None
        low, high = _py_arg_bounds(cpp, extras, arity) or arity_bounds(arity, as_method)
        line = cpp.tokens[name_index].line
        self.ops.append(CudaOp(self.file, line, name, "pybind11", low, high, self.cpp_module))


def _is_init(cpp: CppText, part: Tuple[int, int]) -> bool:
    names, after = cpp.qualified_name(*part)
    return (
        bool(names)
        and names[-1] in ("init", "init_alias")
        and (cpp.is_op(after, "<") or cpp.is_op(after, "("))
    )


def _init_arity(cpp: CppText, part: Tuple[int, int]) -> Optional[Arity]:
    """``py::init<A, B>()`` -> 2; ``py::init([](A a) {...})`` / ``py::init(&make)`` -> the callable's."""
    start, end = part
    _, after = cpp.qualified_name(start, end)
    if cpp.is_op(after, "<"):
        close = cpp.template_end(after, end)
        if close is None:
            return None
        count = len(cpp.split(after + 1, close))
        return Arity(count, count, False)
    paren_close = cpp.group_end(after, end + 1) if cpp.is_op(after, "(") else None
    if paren_close is None:
        return None
    inner = cpp.split(after + 1, paren_close)
    return callable_arity(cpp, inner[0]) if len(inner) == 1 else None


def _py_arg_bounds(
    cpp: CppText, extras: Sequence[Tuple[int, int]], arity: Optional[Arity]
) -> Optional[Tuple[int, int]]:
    """py::arg("x") / "x"_a items name the Python parameters; ones with a default are optional.
    A variadic callable (py::args) keeps an open upper bound. None without py::arg items."""
    declared = [part for part in extras if _is_py_arg(cpp, part)]
    if not declared:
        return None
    optional = sum(1 for part in declared if cpp.has_assignment(part) or _names_end(cpp, part, "arg_v"))
    variadic = arity is not None and arity.high == -1
    return len(declared) - optional, -1 if variadic else len(declared)


def _is_py_arg(cpp: CppText, part: Tuple[int, int]) -> bool:
    start, _ = part
    if cpp.tokens[start].kind == "str" and cpp.is_id(start + 1, "_a"):
        return True
    return _names_end(cpp, part, "arg") or _names_end(cpp, part, "arg_v")


def _names_end(cpp: CppText, part: Tuple[int, int], name: str) -> bool:
    """The part starts with a call of ``[py::]name(``."""
    names, after = cpp.qualified_name(*part)
    return bool(names) and names[-1] == name and cpp.is_op(after, "(")
