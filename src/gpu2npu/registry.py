"""Units found by registration: each module of a package defines one object under a fixed name
(``STYLE``, ``TARGET``); they are imported once, on first use, and kept in help order."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Iterable, List, TypeVar

from gpu2npu.errors import UserError

Unit = TypeVar("Unit")


def registered(package: str, path: Iterable[str], attribute: str) -> List:
    """The ``attribute`` of every module of ``package``, by ``order`` then ``name``."""
    found = [
        getattr(importlib.import_module(f"{package}.{m.name}"), attribute) for m in pkgutil.iter_modules(path)
    ]
    return sorted(found, key=lambda unit: (unit.order, unit.name))


def named(units: List[Unit], name: str, what: str) -> Unit:
    """The unit called ``name``; an unknown name is a user error that lists the known ones."""
    for unit in units:
        if unit.name == name:
            return unit
    raise UserError(f"unknown {what} '{name}'", f"choose one of {', '.join(u.name for u in units)}")
