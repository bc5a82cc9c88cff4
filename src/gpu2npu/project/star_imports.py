"""What ``from module import *`` of a project module binds in the file that writes it: the names
the module binds by its module-level imports, and those of the project modules it star-imports
in turn, as Python exports them (none starting with ``_``; only the ones ``__all__`` lists where
the module sets it). CogVideo's RIFE.py calls ``torch.cuda.is_available()`` with a ``torch``
that arrives through ``from .IFNet import *`` -> ``from .refine import *`` -> ``import torch``:
without these bindings its ``torch`` is no known module, so its ``'cuda'`` changed while its CUDA
test stayed, and the model ran on the CPU.

Read off the bytes (imports at column 0), for the files some project file star-imports only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

Bindings = Tuple[Tuple[str, str], ...]  # (name, what it stands for), e.g. ("nn", "torch.nn")

_STAR = re.compile(rb"^from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]*\*", re.MULTILINE)
_MODULE_IMPORT = re.compile(rb"^import[ \t]+([\w. \t,]+?)[ \t]*(?:[#;][^\n]*)?$", re.MULTILINE)
_FROM_IMPORT = re.compile(rb"^from[ \t]+(\w[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;\\]+)", re.MULTILINE)
_ALL = re.compile(rb"^__all__\b", re.MULTILINE)


def star_imports(data: bytes) -> Tuple[str, ...]:
    """The modules the file star-imports at module level, as written (``.IFNet``, ``utils``)."""
    if b"*" not in data:
        return ()
    return tuple(match.group(1).decode("ascii", "replace") for match in _STAR.finditer(data))


def star_bindings(root: Path, stars: Dict[str, Tuple[str, ...]], files: FrozenSet[str]):
    """By file, by star-imported module as written, what the import binds: only the files and
    imports that bind something."""
    reader = _Exports(root, stars, files)
    found: Dict[str, Dict[str, Bindings]] = {}
    for rel in sorted(stars):
        for written in stars[rel]:
            target = module_file(rel, written, files)
            bindings = reader.exports(target, frozenset()) if target is not None else ()
            if bindings:
                found.setdefault(rel, {})[written] = bindings
    return found


class _Exports:
    def __init__(self, root: Path, stars: Dict[str, Tuple[str, ...]], files: FrozenSet[str]):
        self.root = root
        self.stars = stars
        self.files = files
        self._done: Dict[str, Bindings] = {}

    def exports(self, rel: str, above: FrozenSet[str]) -> Bindings:
        """What ``from <rel> import *`` binds; ``above``: the modules on the way here (a cycle
        adds nothing)."""
        if rel in self._done:
            return self._done[rel]
        if rel in above:
            return ()
        try:
            data = (self.root / rel).read_bytes()
        except OSError:
            return ()
        found = dict(module_level_imports(data))
        for written in self.stars.get(rel, ()):
            target = module_file(rel, written, self.files)
            if target is not None:
                for name, qualified in self.exports(target, above | {rel}):
                    found.setdefault(name, qualified)
        listed = _listed(data)
        exported = tuple(
            (name, qualified)
            for name, qualified in sorted(found.items())
            if not name.startswith("_") and (listed is None or name in listed)
        )
        if not above:  # a cycle cut below gives a partial answer: kept for this path only
            self._done[rel] = exported
        return exported


def module_level_imports(data: bytes) -> Iterator[Tuple[str, str]]:
    """(name, module or name it stands for) of each absolute import at column 0."""
    for match in _MODULE_IMPORT.finditer(data):
        for part in match.group(1).decode("ascii", "replace").split(","):
            words = part.split()
            if len(words) == 3 and words[1] == "as":
                yield words[2], words[0]
            elif len(words) == 1:
                root = words[0].split(".")[0]
                yield root, root
    for match in _FROM_IMPORT.finditer(data):
        module = match.group(1).decode("ascii", "replace")
        if module == "__future__":
            continue
        for part in match.group(2).decode("ascii", "replace").strip("() \t\r\n").split(","):
            words = part.split()
            if words and words[0] != "*":
                yield (words[2] if len(words) == 3 and words[1] == "as" else words[0]), f"{module}.{words[0]}"


def _listed(data: bytes) -> Optional[Set[str]]:
    """The names a module's ``__all__`` may list (the quoted words of its file), None without one."""
    if _ALL.search(data) is None:
        return None
    return {word.decode("ascii", "replace") for word in re.findall(rb"""['"](\w+)['"]""", data)}


def module_file(rel: str, written: str, files: FrozenSet[str]) -> Optional[str]:
    """The project file ``from <written> import *`` in the file at ``rel`` loads: relative to its
    package, else beside the file, from the root, or under one folder of a ``src/`` layout."""
    module = written.lstrip(".")
    level = len(written) - len(module)
    folder = rel.split("/")[:-1]
    parts = module.split(".") if module else []
    if level:
        if level - 1 > len(folder):
            return None
        bases: List[List[str]] = [folder[: len(folder) - level + 1]]
    else:
        bases = [folder, []]
    for base in bases:
        for found in _candidates("/".join(base + parts), files):
            return found
    if not level and parts:
        tails = sorted(f for f in files if f.endswith(("/" + "/".join(parts) + ".py")))
        return tails[0] if len(tails) == 1 else None
    return None


def _candidates(path: str, files: FrozenSet[str]) -> Iterator[str]:
    for candidate in (f"{path}.py", f"{path}/__init__.py" if path else "__init__.py"):
        if candidate in files:
            yield candidate
