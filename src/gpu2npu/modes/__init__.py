"""The modes of ``gpu2npu analyse``: one package each under gpu2npu.modes, found by walking
this package, so a new mode is one new package and no list to edit.

A mode package's ``__init__`` exports ``MODE``, a ``Mode``: its ``-m`` name, a line of help,
its place in the help, which optional inputs it reads (``-api``, ``-env``), and the module
holding its ``run(request, tree)``, which writes the mode's files into the (temporary,
atomically committed) output tree and returns a ``ModeResult``; the analyse command does the
rest (paths, the log ``pytorch_analysis.txt`` and ``report.json``). That module is imported
only when the mode runs, so ``gpu2npu --help`` loads no mode's dependencies.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Tuple

from gpu2npu.options import ProjectOptions
from gpu2npu.source.parse import reason_alone

ANALYSIS_SUFFIX = "_analysis"
LOG_FILE = "pytorch_analysis.txt"  # written by the analyse command into every analysis
SUMMARY_FILE = "report.json"
API_FILES, ENV_PATHS = "api_files", "env_paths"  # the optional inputs a mode may read


@dataclass(frozen=True)
class AnalyseRequest:
    options: ProjectOptions  # input, target version, rule files, jobs, progress
    api_files: Tuple[Path, ...] = ()  # -api: full_unsupported_results.csv of earlier third_party runs
    env_paths: Tuple[Path, ...] = ()  # -env: extra import search paths (third_party)


@dataclass
class ModeResult:
    reports: Dict[str, int]  # CSV written -> number of data rows, in display order
    log: List[str] = field(default_factory=list)  # lines for pytorch_analysis.txt
    skipped: List[Tuple[str, str]] = field(default_factory=list)  # (file, reason) not analysed
    summary: Dict[str, object] = field(default_factory=dict)  # extra keys for report.json
    hints: List[str] = field(default_factory=list)  # printed after the counts (what to do next)


@dataclass(frozen=True)
class Mode:
    name: str  # the value of -m
    help: str  # one line for `gpu2npu analyse --help`
    order: int  # place in the help and the choices; the first mode is the default
    module: str  # holds run(request: AnalyseRequest, tree: AtomicTree) -> ModeResult
    takes: FrozenSet[str] = frozenset()  # optional inputs it reads: API_FILES, ENV_PATHS

    def run(self, request: AnalyseRequest, tree) -> ModeResult:
        return importlib.import_module(self.module).run(request, tree)


def not_analysed(results) -> List[Tuple[str, str]]:
    """(file, reason) for the files a migration-less pass could not read; nothing is copied
    in an analysis, so what the migration did with the file is dropped."""
    return [(r.rel, reason_alone(r.skipped)) for r in results if r.skipped]


_MODES: List[Mode] = []


def modes() -> List[Mode]:
    """Every mode, in help order (imported once, on first use)."""
    if not _MODES:
        for package in pkgutil.iter_modules(__path__):
            if package.ispkg:
                _MODES.append(importlib.import_module(f"{__name__}.{package.name}").MODE)
        _MODES.sort(key=lambda mode: (mode.order, mode.name))
    return _MODES


def mode_named(name: str) -> Optional[Mode]:
    return next((mode for mode in modes() if mode.name == name), None)


def modes_taking(what: str) -> List[str]:
    return [mode.name for mode in modes() if what in mode.takes]
