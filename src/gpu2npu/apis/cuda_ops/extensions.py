"""The Python side: the C++ extensions a project's Python declares (``CUDAExtension``,
``CppExtension``, ``load``, ``load_inline``), resolved through the file's imports (the one
import table, gpu2npu.source.imports), and the ops of ``load_inline`` calls."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from gpu2npu.apis.cuda_ops.arity import arity_bounds, declared_arities, merge_arities
from gpu2npu.apis.cuda_ops.bindings import parse_cpp_ops
from gpu2npu.apis.cuda_ops.cpp import CppText
from gpu2npu.apis.cuda_ops.model import CudaOp, Extension
from gpu2npu.source.imports import STAR, file_imports, imported_names, qualify
from gpu2npu.source.names import dotted
from gpu2npu.source.parse import module_nodes

EXTENSION_KINDS = ("CUDAExtension", "CppExtension")
LOADER_KINDS = ("load", "load_inline")
CPP_EXTENSION_MODULES = frozenset({"torch.utils.cpp_extension", "cpp_extension"})


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
        for node in module_nodes(tree):
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
                self.imports.update(
                    {kind: f"{name.qualified}.{kind}" for kind in EXTENSION_KINDS + LOADER_KINDS}
                )

    def kind(self, func: ast.AST, depth: int = 0) -> str:
        """'CUDAExtension', ..., 'load_inline' when func names one of them (also through a
        variable: ``extension = CUDAExtension`` then ``extension(...)``); else ''."""
        name = dotted(func)
        if not name:
            return ""
        if isinstance(func, ast.Name) and name not in self.imports and depth < 8:
            value = self.values.get(name)
            if isinstance(value, (ast.Name, ast.Attribute)):
                return self.kind(value, depth + 1)
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
    calls = [(node, info.kind(node.func)) for node in module_nodes(tree) if isinstance(node, ast.Call)]
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
        sources = (
            ()
            if kind == "load_inline"
            else tuple(c.value for c in info.strings(_argument(call, 1, "sources")))
        )
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
        texts = info.strings(_argument(call, 1, "cpp_sources")) + info.strings(
            _argument(call, 2, "cuda_sources")
        )
        cpps = [CppText(text.value) for text in texts]
        for name_node in _function_names(_argument(call, None, "functions")):
            arities = [a for cpp in cpps for a in declared_arities(cpp, name_node.value)]
            low, high = arity_bounds(merge_arities(arities), as_method=False)
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
