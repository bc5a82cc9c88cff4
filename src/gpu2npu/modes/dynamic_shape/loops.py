"""Which ``for`` loops of a file are training loops, to be wrapped in ``DETECTOR.start(...)``
(the runtime records shapes only while a batch of such a loop is being processed).

Read on the stdlib ast, per file, most certain rule first:

1. ``DataLoader``: the loop iterates over a data loader expression -- directly, or through
   ``enumerate(...)`` / ``tqdm(...)`` -- that is a call of ``torch.utils.data.DataLoader``
   (resolved through the file's imports: ``from torch.utils.data import DataLoader as DL``,
   ``import torch.utils.data as tud``) or a name or attribute chain (``train_loader``,
   ``self.train_loader``) that the file assigns from such a call, or from another such name.
2. ``name``: only when the file has no loop of rule 1, the same shapes of loop over a name
   whose last part contains "loader" (typically a parameter: ``def train(model, train_loader)``).
   The log says the loop was chosen by its name.

A loop whose iterable already calls ``DETECTOR.start`` was wrapped by hand: it is reported,
never wrapped twice. ``async for`` loops are left alone (a DataLoader is not async).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from gpu2npu.source.imports import qualify
from gpu2npu.source.names import dotted

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
BY_DATALOADER, BY_NAME, BY_HAND = "DataLoader", "name", "by hand"


@dataclass(frozen=True)
class Loop:
    line: int  # of the ``for`` keyword
    header: str  # "for i, (x, y) in enumerate(train_loader)", as written (blanks collapsed)
    found_by: str  # BY_DATALOADER, BY_NAME or BY_HAND
    loader: str  # the loader expression, e.g. "train_loader"


def find_loops(tree: ast.Module, source: str, table: Dict[str, str]) -> List[Loop]:
    """The loops to wrap (rule 1, else rule 2) and those wrapped by hand, in line order."""
    loaders = _loader_names(tree, table)
    found: Dict[str, List[Loop]] = {BY_DATALOADER: [], BY_NAME: [], BY_HAND: []}
    for node in ast.walk(tree):
        if isinstance(node, ast.For):
            verdict = _classify(node.iter, loaders, table)
            if verdict is not None:
                found_by, loader = verdict
                found[found_by].append(Loop(node.lineno, _header(node, source), found_by, loader))
    chosen = found[BY_DATALOADER] or found[BY_NAME]
    return sorted(chosen + found[BY_HAND], key=lambda loop: loop.line)


def _is_dataloader_call(node: ast.AST, table: Dict[str, str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = dotted(node.func)
    return name is not None and qualify(name, table) in DATALOADERS


def _loader_names(tree: ast.Module, table: Dict[str, str]) -> Set[str]:
    """Names and attribute chains assigned a DataLoader, directly or from another such name."""
    assignments: List[Tuple[List[ast.AST], ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            assignments.append((node.targets, node.value))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            assignments.append(([node.target], node.value))
    loaders: Set[str] = set()
    grew = True
    while grew:  # a = DataLoader(...); b = a; self.c = b
        before = len(loaders)
        for targets, value in assignments:
            if _is_dataloader_call(value, table) or dotted(value) in loaders:
                loaders.update(name for name in map(dotted, targets) if name)
        grew = len(loaders) > before
    return loaders


def _classify(iterable: ast.AST, loaders: Set[str], table: Dict[str, str]) -> Optional[Tuple[str, str]]:
    """(found_by, loader expression) for a loop over a data loader, else None."""
    if _calls_detector_start(iterable):
        return BY_HAND, ast.unparse(iterable)
    inner = _unwrapped(iterable, table)
    if _is_dataloader_call(inner, table):
        return BY_DATALOADER, dotted(inner.func) + "(...)"
    name = dotted(inner)
    if name is None:
        return None
    if name in loaders:
        return BY_DATALOADER, name
    if "loader" in name.rsplit(".", 1)[-1].lower():
        return BY_NAME, name
    return None


def _unwrapped(iterable: ast.AST, table: Dict[str, str]) -> ast.AST:
    """``x`` for ``enumerate(x, ...)`` and ``tqdm(x, ...)``; else the iterable itself."""
    if isinstance(iterable, ast.Call) and iterable.args:
        name = dotted(iterable.func) or ""
        if name == "enumerate" or qualify(name, table).rsplit(".", 1)[-1] == "tqdm":
            return iterable.args[0]
    return iterable


def _calls_detector_start(node: ast.AST) -> bool:
    return any(
        isinstance(child, ast.Call) and dotted(child.func) == "DETECTOR.start" for child in ast.walk(node)
    )


def _header(node: ast.For, source: str) -> str:
    target = ast.get_source_segment(source, node.target) or ast.unparse(node.target)
    iterable = ast.get_source_segment(source, node.iter) or ast.unparse(node.iter)
    return " ".join(f"for {target} in {iterable}".split())
