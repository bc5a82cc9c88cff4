"""How many arguments a bound C++ callable takes: a lambda, ``&fn``, ``&Cls::fn``,
``py::overload_cast<A, B>(&fn)``, wrappers such as ``TORCH_FN(fn)``, found through the
definitions in the same text."""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence, Tuple

from gpu2npu.apis.cuda_ops.cpp import CppText
from gpu2npu.apis.cuda_ops.model import UNKNOWN_ARITY

# Wrappers around a function reference whose last argument is the function itself.
CALLABLE_WRAPPERS = frozenset(
    {
        "static_cast",
        "reinterpret_cast",
        "TORCH_FN",
        "dispatch",
        "cpp_function",
        "vectorize",
        "wrap_pybind_function",
    }
)


class Arity(NamedTuple):
    low: int
    high: int  # -1: unbounded
    self_param: bool  # the callable's first parameter is the bound object (free function as method)


def arity_of_params(cpp: CppText, params: List[Tuple[int, int]], owner_type: str) -> Arity:
    fixed = sum(1 for param in params if not cpp.is_variadic(param))
    self_param = bool(owner_type and params and cpp.mentions(params[0], owner_type))
    return Arity(fixed, fixed if fixed == len(params) else -1, self_param)


def merge_arities(arities: Sequence[Arity]) -> Optional[Arity]:
    """Overloads found by name: the widest bounds."""
    if not arities:
        return None
    high = -1 if any(a.high == -1 for a in arities) else max(a.high for a in arities)
    return Arity(min(a.low for a in arities), high, all(a.self_param for a in arities))


def callable_arity(
    cpp: CppText, part: Tuple[int, int], owner_type: str = "", depth: int = 0
) -> Optional[Arity]:
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
            return Arity(count, count, False)
        after = template_close + 1
    if cpp.is_op(after, "("):  # a wrapper call: the function is its last argument
        close = cpp.group_end(after, end + 1)
        args = cpp.split(after + 1, close) if close is not None else []
        if names[-1] in CALLABLE_WRAPPERS and args:
            return callable_arity(cpp, args[-1], owner_type, depth + 1)
        return None
    if after != end:
        return None
    arities = declared_arities(cpp, names[-1], owner_type)
    if len(names) > 1 and owner_type and names[-2] == owner_type:  # &Cls::method: `this` is implicit
        arities = [a._replace(self_param=False) for a in arities]
    return merge_arities(arities)


def declared_arities(cpp: CppText, name: str, owner_type: str = "") -> List[Arity]:
    """Arities of the definitions of name in the text (cached: big files bind many ops)."""
    key = (name, owner_type)
    if key not in cpp.arity_cache:
        cpp.arity_cache[key] = [arity_of_params(cpp, params, owner_type) for params in cpp.declarations(name)]
    return cpp.arity_cache[key]


def _lambda_arity(cpp: CppText, start: int, end: int, owner_type: str) -> Optional[Arity]:
    capture_end = cpp.group_end(start, end)
    if capture_end is None:
        return None
    if not cpp.is_op(capture_end + 1, "("):
        return Arity(0, 0, False)  # [] { ... }
    params = cpp.parameters(capture_end + 1)
    return None if params is None else arity_of_params(cpp, params, owner_type)


def arity_bounds(arity: Optional[Arity], as_method: bool) -> Tuple[int, int]:
    if arity is None:
        return UNKNOWN_ARITY
    drop = 1 if as_method and arity.self_param and arity.low > 0 else 0
    return arity.low - drop, arity.high - drop if arity.high >= 0 else -1
