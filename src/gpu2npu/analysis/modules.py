"""Module names and import statements, as the analyses of a whole project read them."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Tuple


def package_prefix(root: Path) -> str:
    """The dotted package the input root is part of ('' unless it holds an __init__.py), so
    that ``-i repo/pkg`` names its modules 'pkg.x' as the project's own imports do."""
    names: List[str] = []
    directory = root.resolve()
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        names.append(directory.name)
        directory = directory.parent
    return ".".join(reversed(names))


def module_name(rel: str, prefix: str = "") -> Tuple[str, bool]:
    """'models/layers.py' -> ('models.layers', False); 'models/__init__.py' -> ('models', True)."""
    parts = rel[: -len(".py")].split("/") if rel.endswith(".py") else rel.split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(part for part in (prefix, *parts) if part), is_package


def relative_base(module: str, is_package: bool, level: int, target: Optional[str]) -> Optional[str]:
    """The absolute module of ``from <level dots><target> import ...`` in ``module``."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)] + (target.split(".") if target else [])
    return ".".join(parts) or None


def import_bindings(node, module: str = "", is_package: bool = False) -> Dict[str, str]:
    """Local name -> dotted target of one import statement. Relative imports are made absolute
    from ``module``; without it they bind nothing."""
    bound: Dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                bound[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                bound[root] = root
        return bound
    if node.level and not module:
        return bound
    base = relative_base(module, is_package, node.level, node.module) if node.level else node.module
    if base is None:
        return bound
    for alias in node.names:
        if alias.name != "*":
            bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    return bound
