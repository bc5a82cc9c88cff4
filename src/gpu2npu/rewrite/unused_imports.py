"""Taking out imports a rewrite left unused (``from flash_attn import flash_attn_func`` once every
call became torch_npu's): on the NPU machine the package cannot be installed, and the import
would fail (or, under ``try``, turn the migrated path off).

The rewrite pass notes each import of a function whose rule asks for it (``Droppable``); once the
module is rewritten, the names it still reads decide which go. A name read anywhere keeps its
import: the test is by name, not by scope, so it errs on the side of keeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Iterable, Optional, Set, Tuple

import libcst as cst

from gpu2npu.source.names import dotted_name

# What identifies an imported name in the rewritten tree: (module of a from-import or None, the
# imported dotted name, its ``as`` name or None).
AliasKey = Tuple[Optional[str], str, Optional[str]]


@dataclass(frozen=True)
class Droppable:
    bound: str  # the name the import binds
    key: AliasKey
    statement: FrozenSet[AliasKey]  # every alias of its statement
    line: int
    rule_id: str
    qualified: str


def names_read(module: cst.Module) -> Set[str]:
    """Every plain name the module mentions outside import statements, keyword names and
    attribute names (a superset of the names it reads)."""
    collector = _NameCollector()
    module.visit(collector)
    return collector.names


def without_imports(module: cst.Module, keys: Iterable[AliasKey]) -> cst.Module:
    """``module`` less the imported names of ``keys``; a statement left empty goes (a block left
    empty gets ``pass``; a line with comments keeps them on a ``pass``)."""
    return module.visit(_ImportPruner(frozenset(keys)))


def alias_key(module: Optional[str], alias: cst.ImportAlias) -> AliasKey:
    asname = alias.asname.name.value if alias.asname is not None else None
    return module, dotted_name(alias.name), asname


def package(key: AliasKey) -> str:
    """The top-level package an imported name comes from."""
    module, name, _ = key
    return (module or name).split(".")[0]


class _NameCollector(cst.CSTVisitor):
    def __init__(self):
        self.names: Set[str] = set()

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


class _ImportPruner(cst.CSTTransformer):
    def __init__(self, keys: FrozenSet[AliasKey]):
        self._keys = keys

    def leave_Import(self, original_node, updated_node):
        return self._kept(updated_node, None)

    def leave_ImportFrom(self, original_node, updated_node):
        if (
            updated_node.relative
            or updated_node.module is None
            or isinstance(updated_node.names, cst.ImportStar)
        ):
            return updated_node
        return self._kept(updated_node, dotted_name(updated_node.module))

    def _kept(self, node, module):
        names = [alias for alias in node.names if alias_key(module, alias) not in self._keys]
        if len(names) == len(node.names):
            return node
        if not names:
            return cst.RemovalSentinel.REMOVE
        # The last name keeps the statement's ending: a trailing comma before a closing line.
        names[-1] = names[-1].with_changes(comma=node.names[-1].comma)
        return node.with_changes(names=names)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if updated_node.body:
            return updated_node
        comments = [empty.comment for empty in updated_node.leading_lines]
        if any(comments) or updated_node.trailing_whitespace.comment is not None:
            return updated_node.with_changes(body=[cst.Pass()])
        return cst.RemovalSentinel.REMOVE

    def leave_SimpleStatementSuite(self, original_node, updated_node):
        return updated_node if updated_node.body else updated_node.with_changes(body=[cst.Pass()])

    def leave_IndentedBlock(self, original_node, updated_node):
        if updated_node.body:
            return updated_node
        return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
