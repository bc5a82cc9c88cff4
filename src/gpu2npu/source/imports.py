"""The one import-binding table: which local name an import statement binds, and to what.

Every reader of Python in gpu2npu (the rewrite pass, the API collector, the affinity scan, the
C++-extension finder, the call graph, the dynamic-shape instrumentation) asks here, so that
``import torch.nn as nn``, ``from torch import cuda``, ``from . import ops`` and ``import a.b``
mean the same thing everywhere:

* ``import a.b.c`` binds ``a`` to ``a``; ``import a.b as x`` binds ``x`` to ``a.b``;
* ``from m import n as k`` binds ``k`` to ``m.n``; a relative ``from .m import n`` is resolved
  when the importing module's name is known, else ``n`` is bound to something unknown (None);
* ``from m import *`` binds the names of ``m``, unknown here: it is reported as ``*`` -> ``m``.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

from gpu2npu.source.parse import module_nodes

STAR = "*"


class ImportedName(NamedTuple):
    local: str  # the name bound in the importing scope; STAR for ``from m import *``
    qualified: Optional[str]  # what it stands for (the module for STAR); None: not known


def bound_by_import(name: str, asname: Optional[str]) -> Tuple[str, str]:
    """(local name, qualified name) of ``import name [as asname]``."""
    if asname:
        return asname, name
    root = name.split(".")[0]
    return root, root


def bound_by_from_import(base: Optional[str], name: str, asname: Optional[str]) -> ImportedName:
    """What ``from base import name [as asname]`` binds; ``base`` None: an unresolved module."""
    if name == STAR:
        return ImportedName(STAR, base)
    return ImportedName(asname or name, f"{base}.{name}" if base else None)


def relative_base(module: str, is_package: bool, level: int, target: Optional[str]) -> Optional[str]:
    """The absolute module of ``from <level dots><target> import ...`` in ``module``."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)] + (target.split(".") if target else [])
    return ".".join(parts) or None


def imported_names(
    node: ast.AST, module: Optional[str] = None, is_package: bool = False
) -> List[ImportedName]:
    """What one ``import`` / ``from ... import`` statement binds. Relative imports are made
    absolute from ``module`` (the importing module's dotted name, '' for the root package);
    without it they bind names to something unknown."""
    if isinstance(node, ast.Import):
        return [ImportedName(*bound_by_import(alias.name, alias.asname)) for alias in node.names]
    if node.level:
        base = relative_base(module, is_package, node.level, node.module) if module is not None else None
    else:
        base = node.module
    return [bound_by_from_import(base, alias.name, alias.asname) for alias in node.names]


def import_bindings(node: ast.AST, module: Optional[str] = None, is_package: bool = False) -> Dict[str, str]:
    """Local name -> qualified name of the names one import statement binds to known targets."""
    return {name.local: name.qualified for name in imported_names(node, module, is_package) if _known(name)}


def file_imports(tree: ast.AST) -> Dict[str, str]:
    """Local name -> qualified name of every absolute import anywhere in the file, read as one
    namespace (no scopes): a name imported as two different things is left out, since which
    one a use sees depends on the code path."""
    return imports_table(
        node for node in module_nodes(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
    )


def imports_table(statements: Iterable[ast.AST]) -> Dict[str, str]:
    """``file_imports`` of the given import statements (for a reader that meets them anyway)."""
    table: Dict[str, str] = {}
    ambiguous: Set[str] = set()
    for node in statements:
        for local, qualified in import_bindings(node).items():
            if table.get(local, qualified) != qualified:
                ambiguous.add(local)
            table[local] = qualified
    for local in ambiguous:
        del table[local]
    return table


def qualify(text: str, table: Dict[str, str]) -> str:
    """``F.relu`` -> ``torch.nn.functional.relu`` when ``F`` is in the table; else the text."""
    root, dot, rest = text.partition(".")
    return table[root] + dot + rest if root in table else text


def _known(name: ImportedName) -> bool:
    return name.local != STAR and name.qualified is not None
