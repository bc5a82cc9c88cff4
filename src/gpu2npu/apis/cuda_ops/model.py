"""What the CUDA-operator analysis finds: the operators a project's C++ binds to Python, and
the extensions its Python declares."""

from __future__ import annotations

from dataclasses import dataclass

CPP_SUFFIXES = frozenset({".cpp", ".cc", ".cxx", ".cu", ".cuh"})
# The build defines this macro as the extension's module name (its last dotted component).
EXTENSION_NAME_MACRO = "TORCH_EXTENSION_NAME"
UNKNOWN_ARITY = (0, -1)


@dataclass(frozen=True, order=True)
class CudaOp:
    file: str  # POSIX path of the C++ file relative to the project root (the .py file for load_inline)
    line: int  # 1-based line of the declaration
    name: str  # as Python sees it: 'my_add', 'Conv.forward', 'Conv' (constructor), 'myops.fused_gelu' (ns.op)
    binding: str  # 'pybind11' or 'torch_library'
    min_args: int  # argument-count bounds when known (py::arg defaults make args optional), else 0
    max_args: int  # -1 when unknown/variadic
    cpp_module: str = (
        ""  # literal name in PYBIND11_MODULE(<name>, m); '' for TORCH_EXTENSION_NAME or torch_library
    )


@dataclass(frozen=True)
class Extension:
    module: str  # the importable Python module name the extension builds ('my_ext'); '' when unknown
    file: str  # the .py file declaring it (setup.py or the file calling load/load_inline)
    line: int
    sources: tuple  # source files listed, as written (string constants only)
    kind: str  # 'CUDAExtension', 'CppExtension', 'load', 'load_inline'
    variable: str  # for load()/load_inline(): the name the result is assigned to, else ''
