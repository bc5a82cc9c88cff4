"""Custom CUDA/C++ operators a project builds, and which Python calls go into them.

The C++ side is scanned, not compiled: a small tokenizer drops comments, preprocessor lines and
string contents from the structure, so commented-out or quoted ``m.def`` lines never count, and
declarations may span any number of lines. Inside ``PYBIND11_MODULE`` blocks we read ``m.def``
and ``py::class_`` chains; inside ``TORCH_LIBRARY*`` blocks, schema strings and ``m.impl``.

The Python side (the stdlib ast) finds the extensions that build those files (``CUDAExtension``,
``CppExtension``, ``load``, ``load_inline``), so a call is matched through the module it really goes
into instead of by a name suffix (msFmkTransplt's bug B28: a pybind op named ``forward``
flagged every ``x.forward(...)``, and calls relying on defaults were missed).

One module per job: ``tokens`` and ``cpp`` (C++ text), ``arity`` (argument bounds of a bound
callable), ``pybind`` and ``torch_library`` (the two kinds of binding block), ``bindings`` (one
C++ file, and the project's), ``extensions`` (the Python declarations), ``matching`` (calls).
"""

from gpu2npu.apis.cuda_ops.bindings import parse_cpp_ops, read_cpp_ops
from gpu2npu.apis.cuda_ops.extensions import find_extensions, inline_ops
from gpu2npu.apis.cuda_ops.matching import ops_for_call
from gpu2npu.apis.cuda_ops.model import CPP_SUFFIXES, CudaOp, Extension

__all__ = [
    "CPP_SUFFIXES",
    "CudaOp",
    "Extension",
    "find_extensions",
    "inline_ops",
    "ops_for_call",
    "parse_cpp_ops",
    "read_cpp_ops",
]
