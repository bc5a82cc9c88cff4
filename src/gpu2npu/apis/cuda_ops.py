"""Custom CUDA/C++ operators a project builds, and which Python calls go into them.

The C++ side is scanned, not compiled: a small tokenizer drops comments, preprocessor lines and
string contents from the structure, so commented-out or quoted ``m.def`` lines never count, and
declarations may span any number of lines. Inside ``PYBIND11_MODULE`` blocks we read ``m.def``
and ``py::class_`` chains; inside ``TORCH_LIBRARY*`` blocks, schema strings and ``m.impl``.

The Python side (the stdlib ast) finds the extensions that build those files (``CUDAExtension``,
``CppExtension``, ``load``, ``load_inline``), so a call is matched through the module it really goes
into instead of by a name suffix (the reference tool's bug B28: a pybind op named ``forward``
flagged every ``x.forward(...)``, and calls relying on defaults were missed).
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from gpu2npu.source.imports import STAR, file_imports, imported_names, qualify
from gpu2npu.source.names import dotted

CPP_SUFFIXES = frozenset({".cpp", ".cc", ".cxx", ".cu", ".cuh"})
EXTENSION_KINDS = ("CUDAExtension", "CppExtension")
LOADER_KINDS = ("load", "load_inline")
CPP_EXTENSION_MODULES = frozenset({"torch.utils.cpp_extension", "cpp_extension"})
# The build defines this macro as the extension's module name (its last dotted component).
EXTENSION_NAME_MACRO = "TORCH_EXTENSION_NAME"

PYBIND_MACROS = frozenset({"PYBIND11_MODULE"})
# Library macro -> does its block declare ops ('def') or only implement them ('impl')?
LIBRARY_MACROS = {
    "TORCH_LIBRARY": "def",
    "TORCH_LIBRARY_FRAGMENT": "def",
    "STABLE_TORCH_LIBRARY": "def",
    "STABLE_TORCH_LIBRARY_FRAGMENT": "def",
    "TORCH_LIBRARY_IMPL": "impl",
    "STABLE_TORCH_LIBRARY_IMPL": "impl",
}
# Wrappers around a function reference whose last argument is the function itself.
CALLABLE_WRAPPERS = frozenset(
    {"static_cast", "reinterpret_cast", "TORCH_FN", "dispatch", "cpp_function", "vectorize", "wrap_pybind_function"}
)
NOT_A_TYPE = frozenset({"return", "new", "delete", "throw", "case", "else", "do", "sizeof", "co_return", "co_yield"})
AFTER_DEFINITION = frozenset({"{", "const", "noexcept", "->", "override", "final", "try", ":"})
AFTER_PROTOTYPE = frozenset({";", "="})
BLOCK_KEYWORDS = frozenset({"if", "for", "while", "switch", "catch"})
MAX_BLOCK_DEPTH = 32
UNKNOWN_ARITY = (0, -1)


@dataclass(frozen=True, order=True)
class CudaOp:
    file: str  # POSIX path of the C++ file relative to the project root (the .py file for load_inline)
    line: int  # 1-based line of the declaration
    name: str  # as Python sees it: 'my_add', 'Conv.forward', 'Conv' (constructor), 'myops.fused_gelu' (ns.op)
    binding: str  # 'pybind11' or 'torch_library'
    min_args: int  # argument-count bounds when known (py::arg defaults make args optional), else 0
    max_args: int  # -1 when unknown/variadic
    cpp_module: str = ""  # literal name in PYBIND11_MODULE(<name>, m); '' for TORCH_EXTENSION_NAME or torch_library


@dataclass(frozen=True)
class Extension:
    module: str  # the importable Python module name the extension builds ('my_ext'); '' when unknown
    file: str  # the .py file declaring it (setup.py or the file calling load/load_inline)
    line: int
    sources: tuple  # source files listed, as written (string constants only)
    kind: str  # 'CUDAExtension', 'CppExtension', 'load', 'load_inline'
    variable: str  # for load()/load_inline(): the name the result is assigned to, else ''


# -- C++ tokens --------------------------------------------------------------------------------


class _Token(NamedTuple):
    kind: str  # 'id', 'str', 'chr', 'num', 'op'
    text: str  # for strings: the contents without quotes
    line: int


_TOKEN_RE = re.compile(
    r"""
    (?P<space>[ \t\r\f\v]+)
  | (?P<newline>\n)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\()
  | (?P<str>(?:u8|[uUL])?"(?P<body>(?:[^"\\\n]|\\.)*)"?)
  | (?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*'?)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op>::|->|\.\.\.|.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _directive_end(text: str, pos: int) -> int:
    """End of a preprocessor line starting before pos (backslash-newline continues it)."""
    while True:
        newline = text.find("\n", pos)
        if newline == -1:
            return len(text)
        if text[newline - 1 : newline] == "\\" or text[newline - 2 : newline] == "\\\r":
            pos = newline + 1
            continue
        return newline


def _tokenize(text: str) -> List[_Token]:
    tokens: List[_Token] = []
    line, pos, at_line_start = 1, 0, True
    while pos < len(text):
        match = _TOKEN_RE.match(text, pos)
        kind, end = match.lastgroup, match.end()
        if kind == "newline":
            at_line_start = True
        elif kind == "op" and match.group() == "#" and at_line_start:
            end = _directive_end(text, end)  # #include/#define/#if...: never part of a declaration
        elif kind == "raw":
            closing = text.find(")" + match.group("delim") + '"', end)
            content_end = closing if closing >= 0 else len(text)
            _append_string(tokens, text[end:content_end], line)
            end = content_end + len(match.group("delim")) + 2 if closing >= 0 else len(text)
            at_line_start = False
        elif kind == "str":
            _append_string(tokens, match.group("body"), line)
            at_line_start = False
        elif kind not in ("space", "comment"):
            tokens.append(_Token(kind, match.group(), line))
            at_line_start = False
        line += text.count("\n", pos, end)
        pos = end
    return tokens


def _append_string(tokens: List[_Token], body: str, line: int) -> None:
    # Adjacent literals are one string in C++ ("a" "b" == "ab").
    if tokens and tokens[-1].kind == "str":
        tokens[-1] = tokens[-1]._replace(text=tokens[-1].text + body)
    else:
        tokens.append(_Token("str", body, line))


_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(_OPENERS.values())


def _bracket_pairs(tokens: Sequence[_Token]) -> Tuple[Dict[int, int], Dict[int, int]]:
    """opener index -> closer index, and back. Stray closers (macro tricks) are ignored."""
    forward: Dict[int, int] = {}
    stack: List[int] = []
    for index, token in enumerate(tokens):
        if token.kind != "op":
            continue
        if token.text in _OPENERS:
            stack.append(index)
        elif token.text in _CLOSERS:
            # Look a few levels down only, so unbalanced text stays linear.
            for depth in range(len(stack) - 1, max(len(stack) - 8, 0) - 1, -1):
                if _OPENERS[tokens[stack[depth]].text] == token.text:
                    forward[stack[depth]] = index
                    del stack[depth:]
                    break
    return forward, {close: open_ for open_, close in forward.items()}


class _Cpp:
    """One C++ text as tokens, with the structural helpers the binding scanners share."""

    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.close, self.open = _bracket_pairs(self.tokens)
        self._call_names: Optional[Dict[str, List[int]]] = None
        self.arity_cache: Dict[Tuple[str, str], List["_Arity"]] = {}  # (function, owner type) -> arities

    def is_op(self, index: int, text: str) -> bool:
        return 0 <= index < len(self.tokens) and self.tokens[index].kind == "op" and self.tokens[index].text == text

    def is_id(self, index: int, text: Optional[str] = None) -> bool:
        if not 0 <= index < len(self.tokens) or self.tokens[index].kind != "id":
            return False
        return text is None or self.tokens[index].text == text

    def group_end(self, index: int, limit: int) -> Optional[int]:
        """Closer of the bracket opened at index, when it lies before limit."""
        end = self.close.get(index)
        return end if end is not None and end < limit else None

    def template_end(self, index: int, limit: int) -> Optional[int]:
        """The '>' closing the '<' at index (brackets inside are skipped)."""
        depth, i = 0, index
        while i < limit:
            if self.tokens[i].text in _OPENERS and self.tokens[i].kind == "op":
                i = self.close.get(i, limit)
            elif self.is_op(i, "<"):
                depth += 1
            elif self.is_op(i, ">"):
                depth -= 1
                if depth == 0:
                    return i
            elif self.is_op(i, ";") or self.is_op(i, "{"):
                return None
            i += 1
        return None

    def split(self, start: int, end: int, separator: str = ",") -> List[Tuple[int, int]]:
        """Top-level parts of start..end; brackets and template argument lists are not split."""
        parts: List[Tuple[int, int]] = []
        part_start, angle, i = start, 0, start
        while i < end:
            token = self.tokens[i]
            if token.kind == "op" and token.text in _OPENERS:
                close = self.close.get(i)
                i = close + 1 if close is not None and close < end else end
                continue
            if token.kind == "op":
                if token.text == "<" and self.is_id(i - 1) and i > start:
                    angle += 1
                elif token.text == ">" and angle:
                    angle -= 1
                elif token.text == separator and not angle:
                    parts.append((part_start, i))
                    part_start = i + 1
            i += 1
        parts.append((part_start, end))
        return [(s, e) for s, e in parts if s < e]

    def string_of(self, part: Tuple[int, int]) -> Optional[str]:
        """The string when the part is exactly one string literal."""
        start, end = part
        if end - start == 1 and self.tokens[start].kind == "str":
            return self.tokens[start].text
        return None

    def only_string_in(self, part: Tuple[int, int]) -> Optional[str]:
        """The one string literal inside the part (TORCH_SELECTIVE_SCHEMA("...") and the like)."""
        strings = [t.text for t in self.tokens[part[0] : part[1]] if t.kind == "str"]
        return strings[0] if len(strings) == 1 else None

    def has_assignment(self, part: Tuple[int, int]) -> bool:
        """A top-level '=' that is not part of ==, !=, <=, >=."""
        for _ in self._top_level_assignments(*part):
            return True
        return False

    def _top_level_assignments(self, start: int, end: int) -> Iterator[int]:
        i = start
        while i < end:
            if self.tokens[i].kind == "op" and self.tokens[i].text in _OPENERS:
                close = self.close.get(i)
                i = close + 1 if close is not None else end
                continue
            if self.is_op(i, "=") and not self.is_op(i + 1, "="):
                before = self.tokens[i - 1] if i > start else None
                if not (before and before.kind == "op" and before.text in "=!<>"):
                    yield i
            i += 1

    def first_assignment(self, start: int, end: int) -> Optional[int]:
        return next(self._top_level_assignments(start, end), None)

    # -- parameter lists ------------------------------------------------------------------------

    def parameters(self, open_index: int) -> Optional[List[Tuple[int, int]]]:
        """The parameters of the '(' at open_index; (void) is none."""
        close = self.close.get(open_index)
        if close is None:
            return None
        params = self.split(open_index + 1, close)
        if len(params) == 1 and params[0][1] - params[0][0] == 1 and self.is_id(params[0][0], "void"):
            return []
        return params

    def is_variadic(self, param: Tuple[int, int]) -> bool:
        """C varargs, a parameter pack, or pybind11's py::args / py::kwargs."""
        for i in range(*param):
            if self.is_op(i, "..."):
                return True
            if self.is_id(i) and self.tokens[i].text in ("args", "kwargs") and self.is_op(i - 1, "::"):
                if self.is_id(i - 2, "py") or self.is_id(i - 2, "pybind11"):
                    return True
        return False

    def mentions(self, part: Tuple[int, int], name: str) -> bool:
        return any(t.kind == "id" and t.text == name for t in self.tokens[part[0] : part[1]])

    def declarations(self, name: str) -> List[List[Tuple[int, int]]]:
        """Parameter lists of the definitions of ``name(`` in this text (prototypes when no definition)."""
        definitions, prototypes = [], []
        for index in self._calls_of(name):
            params = self.parameters(index + 1)
            if params is None or not self._preceded_by_type(index):
                continue
            after = self.tokens[self.close[index + 1] + 1].text if self.close[index + 1] + 1 < len(self.tokens) else ""
            if after in AFTER_DEFINITION:
                definitions.append(params)
            elif after in AFTER_PROTOTYPE:
                prototypes.append(params)
        return definitions or prototypes

    def _calls_of(self, name: str) -> List[int]:
        if self._call_names is None:
            self._call_names = {}
            for i, token in enumerate(self.tokens):
                if token.kind == "id" and self.is_op(i + 1, "("):
                    self._call_names.setdefault(token.text, []).append(i)
        return self._call_names.get(name, [])

    def _preceded_by_type(self, index: int) -> bool:
        """``Tensor fn(``, ``std::vector<T> fn(``, ``T* Cls::fn(`` -- not ``return fn(``, ``x = fn(``."""
        i = index - 1
        while self.is_op(i, "::") and self.is_id(i - 1):  # qualified definition: skip Cls::
            i -= 2
        if self.is_id(i):
            return self.tokens[i].text not in NOT_A_TYPE
        return self.is_op(i, ">") or self.is_op(i, "*") or self.is_op(i, "&")

    def statements(self, start: int, end: int, depth: int = 0) -> Iterator[Tuple[int, int]]:
        """Top-level statements of a block, descending into nested blocks ({...}, if (...) {...})."""
        statement_start, i = start, start
        while i < end:
            token = self.tokens[i]
            if token.kind == "op" and token.text == ";":
                if statement_start < i:
                    yield statement_start, i
                statement_start = i + 1
            elif token.kind == "op" and token.text in _OPENERS:
                close = self.close.get(i)
                close = close if close is not None and close < end else end
                if token.text == "{" and depth < MAX_BLOCK_DEPTH and self._starts_block(statement_start, i):
                    yield from self.statements(i + 1, close, depth + 1)
                    statement_start = close + 1
                i = close
            i += 1
        if statement_start < end:
            yield statement_start, end

    def _starts_block(self, statement_start: int, brace: int) -> bool:
        if brace == statement_start or self.is_id(brace - 1, "else") or self.is_id(brace - 1, "do"):
            return True
        if self.is_id(brace - 1, "try"):
            return True
        opener = self.open.get(brace - 1) if self.is_op(brace - 1, ")") else None
        return opener is not None and self.is_id(opener - 1) and self.tokens[opener - 1].text in BLOCK_KEYWORDS

    def chain_calls(self, start: int, end: int) -> Iterator[Tuple[str, int, int, int]]:
        """(method, index of its name, args start, args end) for each top-level ``.method(...)``
        or ``.method<...>(...)`` in start..end."""
        i = start
        while i < end:
            token = self.tokens[i]
            if token.kind == "op" and token.text in _OPENERS:
                close = self.close.get(i)
                i = close + 1 if close is not None else end
                continue
            if token.kind == "op" and token.text == "." and self.is_id(i + 1):
                paren = i + 2
                if self.is_op(paren, "<"):
                    angle_end = self.template_end(paren, end)
                    paren = angle_end + 1 if angle_end is not None else end
                close = self.group_end(paren, end) if self.is_op(paren, "(") else None
                if close is not None:
                    yield self.tokens[i + 1].text, i + 1, paren + 1, close
                    i = close + 1
                    continue
            i += 1

    def qualified_name(self, start: int, end: int) -> Tuple[List[str], int]:
        """The ``a::b::c`` names starting at start (a leading '::' allowed) and the index after them."""
        names, i = [], start + 1 if self.is_op(start, "::") else start
        while self.is_id(i) and i < end:
            names.append(self.tokens[i].text)
            if not (self.is_op(i + 1, "::") and i + 2 < end):
                return names, i + 1
            i += 2
        return names, i


# -- arity of a bound callable -------------------------------------------------------------------


class _Arity(NamedTuple):
    low: int
    high: int  # -1: unbounded
    self_param: bool  # the callable's first parameter is the bound object (free function as method)


def _arity_of_params(cpp: _Cpp, params: List[Tuple[int, int]], owner_type: str) -> _Arity:
    fixed = sum(1 for param in params if not cpp.is_variadic(param))
    self_param = bool(owner_type and params and cpp.mentions(params[0], owner_type))
    return _Arity(fixed, fixed if fixed == len(params) else -1, self_param)


def _merge_arities(arities: Sequence[_Arity]) -> Optional[_Arity]:
    """Overloads found by name: the widest bounds."""
    if not arities:
        return None
    high = -1 if any(a.high == -1 for a in arities) else max(a.high for a in arities)
    return _Arity(min(a.low for a in arities), high, all(a.self_param for a in arities))


def _callable_arity(cpp: _Cpp, part: Tuple[int, int], owner_type: str = "", depth: int = 0) -> Optional[_Arity]:
    """Argument bounds of the callable bound by a def: a lambda, ``&fn``, ``fn``, ``&Cls::fn``,
    ``py::overload_cast<A, B>(&fn)``, ``TORCH_FN(fn)``, ``static_cast<...>(&fn)``. C++ default
    arguments are invisible to the bindings, so every parameter is required."""
    start, end = part
    if depth > 8 or start >= end:
        return None
    if cpp.is_op(start, "["):
        return _lambda_arity(cpp, start, end, owner_type)
    if cpp.is_op(start, "&"):
        start += 1
    names, after = cpp.qualified_name(start, end)
    if not names:
        return None
    if cpp.is_op(after, "<"):
        template_close = cpp.template_end(after, end)
        if template_close is None:
            return None
        if names[-1] == "overload_cast":
            count = len(cpp.split(after + 1, template_close))
            return _Arity(count, count, False)
        after = template_close + 1
    if cpp.is_op(after, "("):  # a wrapper call: the function is its last argument
        close = cpp.group_end(after, end + 1)
        args = cpp.split(after + 1, close) if close is not None else []
        if names[-1] in CALLABLE_WRAPPERS and args:
            return _callable_arity(cpp, args[-1], owner_type, depth + 1)
        return None
    if after != end:
        return None
    arities = _declared_arities(cpp, names[-1], owner_type)
    if len(names) > 1 and owner_type and names[-2] == owner_type:  # &Cls::method: `this` is implicit
        arities = [a._replace(self_param=False) for a in arities]
    return _merge_arities(arities)


def _declared_arities(cpp: _Cpp, name: str, owner_type: str = "") -> List[_Arity]:
    """Arities of the definitions of name in the text (cached: big files bind many ops)."""
    key = (name, owner_type)
    if key not in cpp.arity_cache:
        cpp.arity_cache[key] = [_arity_of_params(cpp, params, owner_type) for params in cpp.declarations(name)]
    return cpp.arity_cache[key]


def _lambda_arity(cpp: _Cpp, start: int, end: int, owner_type: str) -> Optional[_Arity]:
    capture_end = cpp.group_end(start, end)
    if capture_end is None:
        return None
    if not cpp.is_op(capture_end + 1, "("):
        return _Arity(0, 0, False)  # [] { ... }
    params = cpp.parameters(capture_end + 1)
    return None if params is None else _arity_of_params(cpp, params, owner_type)


def _bounds(arity: Optional[_Arity], as_method: bool) -> Tuple[int, int]:
    if arity is None:
        return UNKNOWN_ARITY
    drop = 1 if as_method and arity.self_param and arity.low > 0 else 0
    return arity.low - drop, arity.high - drop if arity.high >= 0 else -1


# -- pybind11 ------------------------------------------------------------------------------------


class _ClassBinding(NamedTuple):
    name: str  # the Python name, with any submodule prefix
    cpp_type: str  # last identifier of the bound C++ type, to recognise `self` parameters


class _PybindScanner:
    """The ops of one PYBIND11_MODULE block."""

    def __init__(self, cpp: _Cpp, file: str, module_var: str, cpp_module: str):
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

    def _def(self, prefix: str, owner: Optional[_ClassBinding], name_index: int, args: List[Tuple[int, int]]) -> None:
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
            arity = _callable_arity(cpp, args[1], owner.cpp_type if owner else "") if len(args) > 1 else None
            extras, as_method = args[2:], owner is not None
        low, high = _py_arg_bounds(cpp, extras, arity) or _bounds(arity, as_method)
        line = cpp.tokens[name_index].line
        self.ops.append(CudaOp(self.file, line, name, "pybind11", low, high, self.cpp_module))


def _is_init(cpp: _Cpp, part: Tuple[int, int]) -> bool:
    names, after = cpp.qualified_name(*part)
    return bool(names) and names[-1] in ("init", "init_alias") and (cpp.is_op(after, "<") or cpp.is_op(after, "("))


def _init_arity(cpp: _Cpp, part: Tuple[int, int]) -> Optional[_Arity]:
    """``py::init<A, B>()`` -> 2; ``py::init([](A a) {...})`` / ``py::init(&make)`` -> the callable's."""
    start, end = part
    _, after = cpp.qualified_name(start, end)
    if cpp.is_op(after, "<"):
        close = cpp.template_end(after, end)
        if close is None:
            return None
        count = len(cpp.split(after + 1, close))
        return _Arity(count, count, False)
    paren_close = cpp.group_end(after, end + 1) if cpp.is_op(after, "(") else None
    if paren_close is None:
        return None
    inner = cpp.split(after + 1, paren_close)
    return _callable_arity(cpp, inner[0]) if len(inner) == 1 else None


def _py_arg_bounds(cpp: _Cpp, extras: Sequence[Tuple[int, int]], arity: Optional[_Arity]) -> Optional[Tuple[int, int]]:
    """py::arg("x") / "x"_a items name the Python parameters; ones with a default are optional.
    A variadic callable (py::args) keeps an open upper bound. None without py::arg items."""
    declared = [part for part in extras if _is_py_arg(cpp, part)]
    if not declared:
        return None
    optional = sum(1 for part in declared if cpp.has_assignment(part) or _names_end(cpp, part, "arg_v"))
    variadic = arity is not None and arity.high == -1
    return len(declared) - optional, -1 if variadic else len(declared)


def _is_py_arg(cpp: _Cpp, part: Tuple[int, int]) -> bool:
    start, _ = part
    if cpp.tokens[start].kind == "str" and cpp.is_id(start + 1, "_a"):
        return True
    return _names_end(cpp, part, "arg") or _names_end(cpp, part, "arg_v")


def _names_end(cpp: _Cpp, part: Tuple[int, int], name: str) -> bool:
    """The part starts with a call of ``[py::]name(``."""
    names, after = cpp.qualified_name(*part)
    return bool(names) and names[-1] == name and cpp.is_op(after, "(")


# -- TORCH_LIBRARY -------------------------------------------------------------------------------

_SCHEMA_NAME_RE = re.compile(r"\s*(?:(\w+)::)?([\w.]+)\s*(\(.*)?\Z", re.DOTALL)


def _schema_parameters(signature: str) -> Optional[Tuple[int, int]]:
    """Bounds from ``(Tensor a, int[2] b=[1,1], *, float alpha=1.) -> Tensor``: top-level parameters,
    ones with a default optional; '*' only marks keyword-only ones."""
    depth, current, params = 0, [], []
    for char in signature[1:]:
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            params.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    else:
        return None  # no closing parenthesis: not a schema
    params.append("".join(current).strip())
    params = [p for p in params if p and p != "*"]
    if any(p == "..." for p in params):
        return 0, -1
    optional = sum(1 for p in params if "=" in p)
    return len(params) - optional, len(params)


class _LibraryScanner:
    """The ops of one TORCH_LIBRARY / _FRAGMENT / _IMPL block."""

    def __init__(self, cpp: _Cpp, file: str, namespace: str, module_var: str):
        self.cpp, self.file, self.namespace, self.module_var = cpp, file, namespace, module_var
        self.defs: List[CudaOp] = []
        self.impls: List[CudaOp] = []

    def scan(self, start: int, end: int) -> None:
        for statement_start, statement_end in self.cpp.statements(start, end):
            if self.cpp.is_id(statement_start, self.module_var):
                self._chain(statement_start + 1, statement_end)

    def _chain(self, start: int, end: int) -> None:
        for method, name_index, args_start, args_end in self.cpp.chain_calls(start, end):
            if method == "class_":
                return  # torch::class_ methods live under torch.classes, not torch.ops
            args = self.cpp.split(args_start, args_end)
            if method == "def" and args:
                self._def(name_index, args)
            elif method == "impl" and args:
                self._impl(name_index, args)

    def _op_name(self, text: str) -> Tuple[str, Optional[str]]:
        """'ns.name[.overload]' and the '(...)' signature, if the string is a schema."""
        match = _SCHEMA_NAME_RE.match(text)
        namespace = (match.group(1) or self.namespace) if match else ""
        if not namespace:
            return "", None
        return f"{namespace}.{match.group(2)}", match.group(3)

    def _def(self, name_index: int, args: List[Tuple[int, int]]) -> None:
        text = self.cpp.only_string_in(args[0])
        name, signature = self._op_name(text) if text is not None else ("", None)
        if not name:
            return
        bounds = _schema_parameters(signature) if signature else None
        if bounds is None:
            arity = _callable_arity(self.cpp, args[1]) if len(args) > 1 else None
            bounds = _bounds(arity, as_method=False)
        line = self.cpp.tokens[name_index].line
        self.defs.append(CudaOp(self.file, line, name, "torch_library", bounds[0], bounds[1]))

    def _impl(self, name_index: int, args: List[Tuple[int, int]]) -> None:
        text = self.cpp.only_string_in(args[0])
        name, _ = self._op_name(text) if text is not None else ("", None)
        if name:
            line = self.cpp.tokens[name_index].line
            self.impls.append(CudaOp(self.file, line, name, "torch_library", *UNKNOWN_ARITY))


# -- one C++ file ----------------------------------------------------------------------------------


def _single_name(cpp: _Cpp, part: Tuple[int, int]) -> str:
    return cpp.tokens[part[0]].text if part[1] - part[0] == 1 and cpp.is_id(part[0]) else ""


def _scan(text: str, file: str) -> Tuple[List[CudaOp], List[CudaOp]]:
    """(declared ops, TORCH_LIBRARY_IMPL implementations) of one C++ text."""
    cpp = _Cpp(text)
    defs: List[CudaOp] = []
    impls: List[CudaOp] = []
    for index, token in enumerate(cpp.tokens):
        if token.kind != "id" or (token.text not in PYBIND_MACROS and token.text not in LIBRARY_MACROS):
            continue
        close = cpp.close.get(index + 1) if cpp.is_op(index + 1, "(") else None
        if close is None or not cpp.is_op(close + 1, "{"):
            continue
        args = cpp.split(index + 2, close)
        # The module variable: PYBIND11_MODULE(name, m[, options]), TORCH_LIBRARY(ns, m),
        # TORCH_LIBRARY_IMPL(ns, key, m).
        var_index = 2 if LIBRARY_MACROS.get(token.text) == "impl" else 1
        module_var = _single_name(cpp, args[var_index]) if len(args) > var_index else ""
        if not module_var:
            continue
        body_end = cpp.close.get(close + 1, len(cpp.tokens))
        if token.text in PYBIND_MACROS:
            cpp_module = _single_name(cpp, args[0])
            cpp_module = "" if cpp_module == EXTENSION_NAME_MACRO else cpp_module
            defs += _PybindScanner(cpp, file, module_var, cpp_module).scan(close + 2, body_end)
        else:
            scanner = _LibraryScanner(cpp, file, _single_name(cpp, args[0]), module_var)
            scanner.scan(close + 2, body_end)
            defs += scanner.defs
            impls += scanner.impls
    return defs, impls


def _op_base(name: str) -> str:
    """'ns.op' of 'ns.op.overload'."""
    return ".".join(name.split(".")[:2])


def _with_undeclared_impls(defs: List[CudaOp], impls: List[CudaOp]) -> List[CudaOp]:
    """An m.impl declares nothing new; it stands for its op only when no m.def of it was found."""
    declared = {_op_base(op.name) for op in defs if op.binding == "torch_library"}
    ops = list(defs)
    for impl in sorted(impls):
        if _op_base(impl.name) not in declared:
            declared.add(_op_base(impl.name))
            ops.append(impl)
    return sorted(ops)


def parse_cpp_ops(text: str, file: str) -> List[CudaOp]:
    """The ops one C++ file binds, sorted."""
    try:
        defs, impls = _scan(text, file)
    except (RecursionError, IndexError, KeyError, ValueError):  # heuristic scanner: nonsense yields []
        return []
    return _with_undeclared_impls(defs, impls)


def read_cpp_ops(root: Path, rel_paths: Iterable[str]) -> Tuple[List[CudaOp], List[Tuple[str, str]]]:
    """Parse the given .cpp/.cc/.cxx/.cu/.cuh files; returns (ops sorted, [(rel, reason)] for files that
    cannot be read or decoded -- reported and skipped, never fatal). Other suffixes are ignored."""
    defs: List[CudaOp] = []
    impls: List[CudaOp] = []
    skipped: List[Tuple[str, str]] = []
    for rel in rel_paths:
        if Path(rel).suffix.lower() not in CPP_SUFFIXES:
            continue
        text, reason = _read_text(Path(root) / rel)
        if text is None:
            skipped.append((rel, reason))
            continue
        try:
            file_defs, file_impls = _scan(text, rel)
        except (RecursionError, IndexError, KeyError, ValueError):
            continue
        defs += file_defs
        impls += file_impls
    return _with_undeclared_impls(defs, impls), skipped


def _read_text(path: Path) -> Tuple[Optional[str], str]:
    try:
        data = path.read_bytes()
    except OSError as error:
        return None, f"cannot be read: {error.strerror or error}"
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 text (byte {error.start})"


# -- Python side: extension declarations -----------------------------------------------------------


def _parse_python(source: str) -> Optional[ast.AST]:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _PythonFile:
    """What one Python file says about its extension builds."""

    def __init__(self, tree: ast.AST):
        self.imports = file_imports(tree)  # local name -> qualified name
        self.values: Dict[str, ast.AST] = {}  # NAME = <value>, last assignment in source order
        self.targets: Dict[int, str] = {}  # id(call) -> the name its result is assigned to
        assignments = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                self._bind_star_import(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if len(targets) == 1:
                    assignments.append((node.lineno, targets[0], node.value))
        for _, target, value in sorted(assignments, key=lambda item: item[0]):
            name = dotted(target) or ""
            if isinstance(target, ast.Name):
                self.values[name] = value
            if isinstance(value, ast.Call):
                self.targets[id(value)] = name

    def _bind_star_import(self, node: ast.ImportFrom) -> None:
        """``from torch.utils.cpp_extension import *`` brings the extension builders."""
        for name in imported_names(node):
            if name.local == STAR and name.qualified in CPP_EXTENSION_MODULES:
                self.imports.update({kind: f"{name.qualified}.{kind}" for kind in EXTENSION_KINDS + LOADER_KINDS})

    def kind(self, func: ast.AST) -> str:
        """'CUDAExtension', ..., 'load_inline' when func names one of them; else ''."""
        name = dotted(func)
        if not name:
            return ""
        module, _, last = qualify(name, self.imports).rpartition(".")
        if last not in EXTENSION_KINDS + LOADER_KINDS:
            return ""
        if module in CPP_EXTENSION_MODULES or module.endswith(".cpp_extension"):
            return last
        # A bare CUDAExtension is distinctive enough; a bare load() is not (json.load, torch.load).
        return last if not module and last in EXTENSION_KINDS else ""

    def string(self, node: Optional[ast.AST], depth: int = 0) -> Optional[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and depth < 8:
            return self.string(self.values.get(node.id), depth + 1)
        return None

    def strings(self, node: Optional[ast.AST], depth: int = 0) -> List[ast.Constant]:
        """The string constants a sources-like value lists: 'a', ['a', 'b'], NAME, [...] + [...]."""
        if depth > 8 or node is None:
            return []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node]
        if isinstance(node, ast.Name):
            return self.strings(self.values.get(node.id), depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [c for element in node.elts for c in self.strings(element, depth + 1)]
        if isinstance(node, ast.Starred):
            return self.strings(node.value, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.strings(node.left, depth + 1) + self.strings(node.right, depth + 1)
        if _is_path_join(node):
            parts = [s.value for arg in node.args for s in self.strings(arg, depth + 1)]
            return [ast.Constant("/".join(parts), lineno=node.lineno)] if parts else []
        return []


def _is_path_join(node: ast.AST) -> bool:
    """os.path.join(...) / osp.join(...) -- not 'sep'.join(...)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and not isinstance(node.func.value, ast.Constant)
    )


def _argument(call: ast.Call, index: Optional[int], keyword: str) -> Optional[ast.AST]:
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if index is not None and index < len(call.args) and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    return None


def _extension_calls(tree: ast.AST, info: _PythonFile) -> List[Tuple[ast.Call, str]]:
    calls = [(node, info.kind(node.func)) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return sorted(((c, k) for c, k in calls if k), key=lambda item: (item[0].lineno, item[0].col_offset))


def find_extensions(source: str, file: str) -> List[Extension]:
    """The C++ extensions a Python file declares, in source order; [] on syntax errors."""
    tree = _parse_python(source)
    if tree is None:
        return []
    info = _PythonFile(tree)
    extensions = []
    for call, kind in _extension_calls(tree, info):
        module = info.string(_argument(call, 0, "name")) or ""
        sources = () if kind == "load_inline" else tuple(c.value for c in info.strings(_argument(call, 1, "sources")))
        variable = info.targets.get(id(call), "") if kind in LOADER_KINDS else ""
        extensions.append(Extension(module, file, call.lineno, sources, kind, variable))
    return extensions


def inline_ops(ext_source: str, file: str) -> List[CudaOp]:
    """The ops of the load_inline() calls in a Python file: the ``functions`` names (arity from their
    definition when the C++ source is a literal in the file, else unknown) and any PYBIND11_MODULE
    written in literal cpp_sources. All carry file = the .py file."""
    tree = _parse_python(ext_source)
    if tree is None:
        return []
    info = _PythonFile(tree)
    ops: List[CudaOp] = []
    for call, kind in _extension_calls(tree, info):
        if kind != "load_inline":
            continue
        # Only literal C++ can be read; functions= is taken by keyword because its position
        # changed between torch versions (sycl_sources was inserted before it).
        texts = info.strings(_argument(call, 1, "cpp_sources")) + info.strings(_argument(call, 2, "cuda_sources"))
        cpps = [_Cpp(text.value) for text in texts]
        for name_node in _function_names(_argument(call, None, "functions")):
            arities = [a for cpp in cpps for a in _declared_arities(cpp, name_node.value)]
            low, high = _bounds(_merge_arities(arities), as_method=False)
            ops.append(CudaOp(file, name_node.lineno, name_node.value, "pybind11", low, high))
        for text in texts:
            ops += [_shifted(op, file, text.lineno - 1) for op in parse_cpp_ops(text.value, file)]
    return sorted(ops)




def _function_names(node: Optional[ast.AST]) -> List[ast.Constant]:
    """functions='f', functions=['f', 'g'] or functions={'f': 'doc'}."""
    if isinstance(node, ast.Dict):
        candidates = node.keys
    elif isinstance(node, (ast.List, ast.Tuple)):
        candidates = node.elts
    else:
        candidates = [node]
    return [c for c in candidates if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def _shifted(op: CudaOp, file: str, offset: int) -> CudaOp:
    return CudaOp(file, op.line + offset, op.name, op.binding, op.min_args, op.max_args, op.cpp_module)


# -- matching Python calls -----------------------------------------------------------------------


def _source_paths(extension: Extension) -> List[str]:
    """Each source as written and relative to the declaring file's folder, normalised."""
    folder = posixpath.dirname(extension.file.replace("\\", "/"))
    paths = []
    for source in extension.sources:
        source = source.replace("\\", "/")
        paths.append(posixpath.normpath(source))
        paths.append(posixpath.normpath(posixpath.join(folder, source)))
    return paths


def _covering_extensions(op: CudaOp, extensions: Sequence[Extension]) -> List[Extension]:
    """The extensions that build op's file: exact paths first, then same basename, then the ones
    whose sources could not be read (computed lists, globs)."""
    exact, same_name, unknown = [], [], []
    base = posixpath.basename(op.file)
    for extension in extensions:
        if extension.kind == "load_inline":
            if extension.file == op.file:
                exact.append(extension)
            continue
        paths = _source_paths(extension)
        if not paths:
            unknown.append(extension)
        elif op.file in paths:
            exact.append(extension)
        elif base in {posixpath.basename(p) for p in paths}:
            same_name.append(extension)
    return exact or same_name or unknown


def _python_names(op: CudaOp, extensions: Sequence[Extension]) -> set:
    """The full names a Python call of op can have."""
    covering = _covering_extensions(op, extensions)
    if op.binding == "torch_library":
        namespace, _, rest = op.name.partition(".")
        if namespace == EXTENSION_NAME_MACRO:
            namespaces = {e.module.rsplit(".", 1)[-1] for e in covering if e.module}
        else:
            namespaces = {namespace}
        names = set()
        for ns in namespaces:
            names.add(f"torch.ops.{ns}.{rest}")
            # torch.ops.ns.op dispatches over its overloads; op.default is the unnamed overload.
            names.add(f"torch.ops.{ns}.{rest.split('.')[0]}" if "." in rest else f"torch.ops.{ns}.{rest}.default")
        return names
    if covering:
        prefixes = {p for e in covering for p in (e.module, e.variable) if p}
    else:
        prefixes = {op.cpp_module} if op.cpp_module else set()
    return {f"{prefix}.{op.name}" for prefix in prefixes}


def _argument_count(n_args: int, keywords: tuple) -> Tuple[int, bool]:
    """(arguments given, open-ended?): keywords count; a **kwargs spread makes the count a minimum."""
    names = [k[0] if isinstance(k, (tuple, list)) else k for k in keywords]
    spread = [n for n in names if n in ("**", None)]
    return n_args + len(names) - len(spread), bool(spread)


def _fits(op: CudaOp, count: int, open_ended: bool) -> bool:
    if op.max_args >= 0 and count > op.max_args:
        return False
    return open_ended or count >= op.min_args


def ops_for_call(
    api: str, n_args: int, keywords: tuple, ops: Iterable[CudaOp], extensions: Sequence[Extension]
) -> Optional[CudaOp]:
    """The op a Python call goes into: its full name must be one the op really has -- '<module>.<name>'
    for pybind11 ops (module: the name or load() variable of an extension building the op's file; the
    literal PYBIND11_MODULE name when no extension covers it), 'torch.ops.<ns>.<op>' for TORCH_LIBRARY
    ops -- and the argument count (positional + keyword) must fit the op's bounds."""
    if not api or "." not in api:
        return None
    count, open_ended = _argument_count(n_args, keywords)
    for op in ops:
        quick = api.startswith("torch.ops.") if op.binding == "torch_library" else api.endswith("." + op.name)
        if quick and api in _python_names(op, extensions) and _fits(op, count, open_ended):
            return op
    return None
