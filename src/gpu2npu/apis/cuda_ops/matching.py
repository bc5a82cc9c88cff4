"""Which op a Python call goes into: through the module it really goes into (the extension
building the op's file, or the ``torch.ops`` namespace), and an argument count that fits the
op's bounds -- not by a name suffix, so a pybind op named ``forward`` does not claim every
``x.forward(...)`` (msFmkTransplt's bug B28)."""

from __future__ import annotations

import posixpath
from typing import Iterable, List, Optional, Sequence, Tuple

from gpu2npu.apis.cuda_ops.model import EXTENSION_NAME_MACRO, CudaOp, Extension


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
            names.add(
                f"torch.ops.{ns}.{rest.split('.')[0]}" if "." in rest else f"torch.ops.{ns}.{rest}.default"
            )
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
    api: str,
    n_args: int,
    keywords: tuple,
    ops: Iterable[CudaOp],
    extensions: Sequence[Extension],
    caller: str = "",
) -> Optional[CudaOp]:
    """The op a Python call goes into: its full name must be one the op really has -- '<module>.<name>'
    for pybind11 ops (module: the name or load() variable of an extension building the op's file; the
    literal PYBIND11_MODULE name when no extension covers it), 'torch.ops.<ns>.<op>' for TORCH_LIBRARY
    ops -- and the argument count (positional + keyword) must fit the op's bounds. Where several ops
    fit (RWKV-LM's versions each build a wkv op of the same name), the one the calling file
    ``caller`` builds, else the one nearest to it."""
    if not api or "." not in api:
        return None
    count, open_ended = _argument_count(n_args, keywords)
    fitting = [
        op
        for op in ops
        if (api.startswith("torch.ops.") if op.binding == "torch_library" else api.endswith("." + op.name))
        and api in _python_names(op, extensions)
        and _fits(op, count, open_ended)
    ]
    if len(fitting) < 2 or not caller:
        return fitting[0] if fitting else None
    built_here = [path for e in extensions if e.file == caller for path in _source_paths(e)]
    return max(fitting, key=lambda op: _closeness(op.file, caller, built_here))


def _closeness(file: str, caller: str, built_here: List[str]) -> Tuple[bool, bool, int]:
    """How surely the calling file runs the op in ``file``: one of its own load()'s sources, a
    source it names as a path ending (relative to where it runs), the folders they share."""
    shared = 0
    for mine, theirs in zip(posixpath.dirname(file).split("/"), posixpath.dirname(caller).split("/")):
        if mine != theirs:
            break
        shared += 1
    return file in built_here, any(file.endswith("/" + path) for path in built_here), shared
