"""The ops one C++ file binds to Python (pybind11 and TORCH_LIBRARY blocks), and reading the
project's C++ files: a file that cannot be read or decoded is reported, never fatal."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Optional, Tuple

from gpu2npu.apis.cuda_ops.cpp import CppText
from gpu2npu.apis.cuda_ops.model import CPP_SUFFIXES, EXTENSION_NAME_MACRO, CudaOp
from gpu2npu.apis.cuda_ops.pybind import PYBIND_MACROS, PybindScanner
from gpu2npu.apis.cuda_ops.torch_library import LIBRARY_MACROS, LibraryScanner


def _single_name(cpp: CppText, part: Tuple[int, int]) -> str:
    return cpp.tokens[part[0]].text if part[1] - part[0] == 1 and cpp.is_id(part[0]) else ""


def scan_bindings(text: str, file: str) -> Tuple[List[CudaOp], List[CudaOp]]:
    """(declared ops, TORCH_LIBRARY_IMPL implementations) of one C++ text."""
    cpp = CppText(text)
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
            defs += PybindScanner(cpp, file, module_var, cpp_module).scan(close + 2, body_end)
        else:
            scanner = LibraryScanner(cpp, file, _single_name(cpp, args[0]), module_var)
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
        defs, impls = scan_bindings(text, file)
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
            file_defs, file_impls = scan_bindings(text, rel)
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
