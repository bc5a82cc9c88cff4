"""The ops of a ``TORCH_LIBRARY`` / ``_FRAGMENT`` / ``_IMPL`` block: schema strings of ``m.def``
(bounds from the schema's parameters) and ``m.impl`` (which stands for its op only when no
``m.def`` of it was found)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from gpu2npu.apis.cuda_ops.arity import arity_bounds, callable_arity
from gpu2npu.apis.cuda_ops.cpp import CppText
from gpu2npu.apis.cuda_ops.model import UNKNOWN_ARITY, CudaOp

# Library macro -> does its block declare ops ('def') or only implement them ('impl')?
LIBRARY_MACROS = {
    "TORCH_LIBRARY": "def",
    "TORCH_LIBRARY_FRAGMENT": "def",
    "STABLE_TORCH_LIBRARY": "def",
    "STABLE_TORCH_LIBRARY_FRAGMENT": "def",
    "TORCH_LIBRARY_IMPL": "impl",
    "STABLE_TORCH_LIBRARY_IMPL": "impl",
}


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


class LibraryScanner:
    """The ops of one TORCH_LIBRARY / _FRAGMENT / _IMPL block."""

    def __init__(self, cpp: CppText, file: str, namespace: str, module_var: str):
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
            arity = callable_arity(self.cpp, args[1]) if len(args) > 1 else None
            bounds = arity_bounds(arity, as_method=False)
        line = self.cpp.tokens[name_index].line
        self.defs.append(CudaOp(self.file, line, name, "torch_library", bounds[0], bounds[1]))

    def _impl(self, name_index: int, args: List[Tuple[int, int]]) -> None:
        text = self.cpp.only_string_in(args[0])
        name, _ = self._op_name(text) if text is not None else ("", None)
        if name:
            line = self.cpp.tokens[name_index].line
            self.impls.append(CudaOp(self.file, line, name, "torch_library", *UNKNOWN_ARITY))
