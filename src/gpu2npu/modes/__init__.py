"""The modes of ``gpu2npu analyse``. Each mode is one module with a ``run(request, tree)``
function that writes its files into the (temporary, atomically committed) output tree and
returns what it found; ``gpu2npu.analyse`` does the rest (paths, log, report.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

from gpu2npu.options import MigrateOptions
from gpu2npu.source.parse import COPIED


@dataclass(frozen=True)
class AnalyseRequest:
    options: MigrateOptions  # input, output, target version, rule files, jobs, force, progress
    api_files: Tuple[Path, ...] = ()  # -api: full_unsupported_results.csv of earlier third_party runs
    env_paths: Tuple[Path, ...] = ()  # -env: extra import search paths (third_party)


@dataclass
class ModeResult:
    reports: Dict[str, int]  # CSV written -> number of data rows, in display order
    log: List[str] = field(default_factory=list)  # lines for pytorch_analysis.txt
    skipped: List[Tuple[str, str]] = field(default_factory=list)  # (file, reason) not analysed
    summary: Dict[str, object] = field(default_factory=dict)  # extra keys for report.json
    hints: List[str] = field(default_factory=list)  # printed after the counts (what to do next)


def not_analysed(results) -> List[Tuple[str, str]]:
    """(file, reason) for the files a migration-less pass could not read; nothing is copied
    in an analysis, so the migration's "copied unchanged" is dropped."""
    return [(r.rel, r.skipped.replace(COPIED, "")) for r in results if r.skipped]


MODES = ("torch_apis", "third_party", "affinity_apis", "dynamic_shape")


def mode_runner(mode: str):
    """The run function of a mode (imported on demand: a mode's dependencies load only when used)."""
    from importlib import import_module

    return import_module(f"gpu2npu.modes.{mode}").run
