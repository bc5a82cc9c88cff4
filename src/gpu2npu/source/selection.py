"""Which paths of the input a run takes: the user's --include / --exclude patterns (gitignore
syntax, matched against paths relative to the input) and the folders left out by default
(version control, virtual environments, caches, build output)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, Optional, Tuple

import pathspec

# Folders that are never part of the project's code, left out wherever they are.
TOOL_FOLDERS = {
    ".git": "version control",
    ".hg": "version control",
    ".svn": "version control",
    "__pycache__": "a Python bytecode cache",
    ".mypy_cache": "a tool cache",
    ".pytest_cache": "a tool cache",
    ".ruff_cache": "a tool cache",
    ".gpu2npu_cache": "gpu2npu's own cache",
    ".tox": "test environments",
    ".nox": "test environments",
    ".eggs": "build output",
    "node_modules": "installed JavaScript packages",
}
# Root folders that are build output when everything in them is what setuptools writes there.
BUILD_FOLDERS: Dict[str, Callable[[str], bool]] = {
    "build": lambda name: name.startswith(("lib", "temp.", "bdist.", "scripts-")),
    "dist": lambda name: name.endswith((".whl", ".tar.gz", ".zip", ".egg")),
}


@dataclass(frozen=True)
class Selection:
    includes: Tuple[str, ...] = ()  # only matching files are migrated (all when empty)
    excludes: Tuple[str, ...] = ()  # matching files are copied as they are, not migrated
    default_excludes: bool = True  # leave out version control, virtual environments, build output
    prefix: str = ""  # check: the input as the user named it, so "proj/legacy/*" matches too
    only: Optional[FrozenSet[str]] = None  # check --changed-only: these files (relative paths) at most

    def excluded(self, rel: str) -> bool:
        """Whether a file is left to the copy: excluded, or not among the included."""
        if self.only is not None and rel not in self.only:
            return True
        if self.excludes and self._matches(self.excludes, rel):
            return True
        return bool(self.includes) and not self._matches(self.includes, rel)

    def _matches(self, patterns: Tuple[str, ...], rel: str) -> bool:
        spec = _spec(patterns)
        return spec.match_file(rel) or bool(self.prefix) and spec.match_file(self.prefix + rel)

    def left_out_folder(self, rel: str, path: Path) -> Optional[str]:
        """Why a folder is left out of the run and the output (None: it is taken)."""
        if not self.default_excludes:
            return None
        what = _tool_folder(rel, path)
        if what is None:
            return None
        return f"{what}; not copied (--no-default-excludes takes it)"


def _tool_folder(rel: str, path: Path) -> Optional[str]:
    name = rel.rsplit("/", 1)[-1]
    if name in TOOL_FOLDERS:
        return TOOL_FOLDERS[name]
    if name.endswith(".egg-info"):
        return "build output"
    if (path / "pyvenv.cfg").is_file():
        return "a virtual environment"
    if (path / "conda-meta").is_dir():
        return "a conda environment"
    if "/" not in rel and name in BUILD_FOLDERS and _holds_build_output(path, BUILD_FOLDERS[name]):
        return "build output"
    return None


def _holds_build_output(path: Path, written_by_setuptools: Callable[[str], bool]) -> bool:
    try:
        names = [child.name for child in path.iterdir()]
    except OSError:
        return False
    return bool(names) and all(written_by_setuptools(name) for name in names)


DEFAULT_SELECTION = Selection()
_SPECS: dict = {}


def _spec(patterns: Tuple[str, ...]) -> pathspec.PathSpec:
    if patterns not in _SPECS:
        _SPECS[patterns] = pathspec.GitIgnoreSpec.from_lines(patterns)
    return _SPECS[patterns]
