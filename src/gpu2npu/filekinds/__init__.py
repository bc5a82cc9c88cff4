"""File kinds: the one unit that teaches gpu2npu a kind of file of a training repository.

A kind is a subclass of ``FileKind`` that names itself; defining the class registers it. The
built-in kinds are the modules of this package, imported on first use, so a new file kind is
one new module here (plus its rules in ``rules/files/`` and its fixtures) and no list to edit.
A kind declares:

* ``name``: shown in the reports' File Kind column (``shell``, ``yaml``, ``notebook``...);
* ``order``: kinds are asked in this order, the first that claims a file gets it;
* ``max_bytes``: larger files are not this kind's (they are copied as they are);
* ``holds_code``: the file is Python code (a notebook): it gets a verdict like a .py file;
* ``claims(rel, head)``: whether the file at ``rel`` (POSIX path in the input) is of this kind;
  ``head()`` gives its first bytes, read only when a kind asks (a shebang line);
* ``migrate(data, rel, context)``: a ``KindOutcome``: the new bytes (None: unchanged), the
  changes made, what was found and left (``Reported``), or why the file was copied unread.

Python files are the ``python`` kind: they go through gpu2npu.rewrite and the API analysis,
which the worker runs itself (``migrate`` is not called for them).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Callable, ClassVar, Dict, List, Optional

from gpu2npu.filekinds.base import KindContext, KindOutcome, PlannedDependency, Reported

__all__ = [
    "FileKind",
    "KindContext",
    "KindOutcome",
    "PlannedDependency",
    "Reported",
    "classify",
    "file_kind_named",
    "file_kinds",
]

PYTHON = "python"
HEAD_BYTES = 256

_REGISTRY: Dict[str, "FileKind"] = {}
_LOADED = False


class FileKind:
    name: ClassVar[str] = ""
    order: ClassVar[int] = 50
    holds_code: ClassVar[bool] = False  # Python code whose API uses are judged (a verdict per file)
    edits: ClassVar[bool] = True  # it may change a file (the kind that only reports: False)
    max_bytes: ClassVar[Optional[int]] = 16 * 1024 * 1024

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            _REGISTRY[cls.name] = cls()

    def claims(self, rel: str, head: Callable[[], bytes]) -> bool:
        raise NotImplementedError

    def migrate(self, data: bytes, rel: str, context: KindContext) -> KindOutcome:
        raise NotImplementedError


def file_kinds() -> List[FileKind]:
    """Every registered kind, in the order they are asked."""
    if not _LOADED:
        _load_builtin_kinds()
    return sorted(_REGISTRY.values(), key=lambda kind: (kind.order, kind.name))


def file_kind_named(name: str) -> Optional[FileKind]:
    if not _LOADED:
        _load_builtin_kinds()
    return _REGISTRY.get(name)


def classify(rel: str, size: int, head: Callable[[], bytes]) -> Optional[str]:
    """The name of the kind that claims the file, or None (copied as it is, never read)."""
    for kind in file_kinds():
        if (kind.max_bytes is None or size <= kind.max_bytes) and kind.claims(rel, head):
            return kind.name
    return None


def migrates_file(path: Path) -> bool:
    """Whether a kind that may change files claims the file at ``path`` (a single-file input)."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    kind = file_kind_named(classify(path.name, size, lambda: read_head(path)) or "")
    return kind is not None and kind.edits


def read_head(path: Path) -> bytes:
    """The first bytes of a file, for the kinds that look at them (b"" when unreadable)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return b""


def _load_builtin_kinds() -> None:
    global _LOADED
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_") and module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
    _LOADED = True
