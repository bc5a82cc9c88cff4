"""What of a file the rules keep as it is, decided on the stdlib ast before the rewrite pass:
calls whose result is read where the NPU gives nothing usable (reads), the CUDA tests before
CUDA-only code (guards, which count the kept calls as CUDA-only), device strings compared
with data (compared), wrappers whose attribute the file reads (wrappers), and collectives of a
dtype the NPU refuses (reductions). The pass leaves
each as it is and the reports list it."""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Optional

from gpu2npu.rewrite.changes import Kept
from gpu2npu.rewrite.compared import kept_compared_strings
from gpu2npu.rewrite.guards import kept_guards, kept_switches
from gpu2npu.rewrite.kept_strings import (
    kept_argument_strings,
    kept_member_strings,
    kept_peer_strings,
    may_name_a_peer,
)
from gpu2npu.rewrite.reads import kept_reads
from gpu2npu.rewrite.reductions import kept_reductions
from gpu2npu.rewrite.string_names import literal_rewritten
from gpu2npu.rewrite.wrappers import kept_wrappers
from gpu2npu.rules.index import RuleIndex
from gpu2npu.source.imports import file_imports


def file_kept(
    data: bytes,
    tree: Optional[ast.AST],
    index: RuleIndex,
    cuda_modules: FrozenSet[str] = frozenset(),
    wrapper_read_from: FrozenSet[str] = frozenset(),
    npu_getters: FrozenSet[str] = frozenset(),
) -> List[Kept]:
    """Everything the rules keep in a file, after cheap tests on its bytes; ``wrapper_read_from``:
    the functions whose result some file reads a wrapper's attribute of (``model.module``);
    ``npu_getters``: the project's functions that name the NPU themselves, as the file may spell
    them (gpu2npu.rewrite.kept_strings.npu_getters)."""
    if tree is None:
        return []
    imports = None
    kept: List[Kept] = []
    if any(_mentions(data, name) for name in index.kept_reads):
        imports = file_imports(tree)
        kept += kept_reads(tree, imports, index.kept_reads)
    if (
        any(_mentions(data, test) for test in index.guard_tests)
        or any(".".join(gate.split(".")[-2:]).encode() in data for gate in index.build_gates)
        or (
            index.guard_tests and b".type" in data and b"cuda" in data
        )  # x.device.type == 'cuda' is a CUDA test too
    ):
        imports = imports if imports is not None else file_imports(tree)
        calls = frozenset((k.line, k.key) for k in kept)
        guarded = kept_guards(tree, imports, index, cuda_modules, calls)
        skipped = {(k.line, k.key) for k in guarded if k.works}  # a read the NPU never makes
        kept = [k for k in kept if (k.line, k.key) not in skipped] + guarded
    if index.cuda_switches and any(s.keyword.encode() in data for s in index.cuda_switches):
        imports = imports if imports is not None else file_imports(tree)
        kept += kept_switches(tree, imports, index.cuda_switches, index.guard_tests)
    if any(_mentions(data, name) for name in index.kept_wrappers):
        imports = imports if imports is not None else file_imports(tree)
        kept += kept_wrappers(tree, imports, index.kept_wrappers, wrapper_read_from)
    if any(_may_pass(data, rule) for rule in index.argument_strings):
        imports = imports if imports is not None else file_imports(tree)
        kept += kept_argument_strings(tree, imports, index.argument_strings)
    if index.member_strings is not None and b"class" in data:
        imports = imports if imports is not None else file_imports(tree)
        kept += kept_member_strings(tree, imports, index.member_strings, literal_rewritten(index))
    if index.peer_strings is not None:
        getters = [g for g in npu_getters if _mentions(data, g)]
        if getters or may_name_a_peer(data, index.peer_strings.pairs):
            kept += kept_peer_strings(tree, index.peer_strings, literal_rewritten(index), getters)
    if index.reduced_dtypes and any(
        _mentions(data, c) for rule in index.reduced_dtypes for c in rule["collectives"]
    ):
        imports = imports if imports is not None else file_imports(tree)
        kept += kept_reductions(tree, imports, index)
    if index.compared_strings and index.needs_rewrite(data):
        imports = imports if imports is not None else file_imports(tree)
        for rule in index.compared_strings:
            if rule.only_sources and not any(_mentions(data, source) for source in rule.sources):
                continue  # Triton's backend name: only where the file asks for it
            kept += kept_compared_strings(tree, imports, index.strings, rule, index.string_names)
    return sorted(kept)


def _may_pass(data: bytes, rule) -> bool:
    """Whether the bytes may pass a string a KeepArgumentStringRule keeps: its keyword, or for an
    argument that may be positional, one of its callees."""
    if rule.position >= 0:
        return any(_mentions(data, name) for name in rule.funcs)
    return rule.keyword.encode() in data


def _mentions(data: bytes, name: str) -> bool:
    return name.rsplit(".", 1)[-1].encode() in data
