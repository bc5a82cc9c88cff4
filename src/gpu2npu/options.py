"""The validated settings of one run, built once by the CLI and never changed after."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Tuple


@dataclass(frozen=True)
class ProjectOptions:
    """What every command reads, and how: the input tree, the target version, the rules."""

    input: Path
    version: str
    rule_files: Tuple[str, ...] = ()
    disabled_rules: Tuple[str, ...] = ()
    jobs: int = 0  # 0: one worker per core
    progress: bool = False
    style: str = "full"  # the migration mode (gpu2npu.styles)
    target: str = "npu"  # what the tree runs on (gpu2npu.targets)
    entries: Tuple[Path, ...] = ()  # entry scripts named with --entry (else found by the scan)
    entry_flag: str = "--entry"  # how the user named the entries (distributed: -m), for messages
    target_model: Optional[str] = None  # distributed: the variable holding the model (-t); None: not given
    shard_eval: bool = False  # distributed: shard evaluation loaders too
    selection: Any = None  # gpu2npu.source.selection.Selection (--include, --exclude); None: the default
    cache_dir: Optional[Path] = None  # the per-file result cache (gpu2npu.project.cache); None: no cache
    # --optimize: () none; ("safe",) the exact and tolerance ones; ("all",) all; else rule ids
    optimize: Tuple[str, ...] = ()

    @property
    def workers(self) -> int:
        return self.jobs if self.jobs > 0 else (os.cpu_count() or 1)


@dataclass(frozen=True)
class OutputOptions:
    """Where ``migrate`` and ``analyse`` write: ``directory/<input name><suffix>/``."""

    directory: Path
    force: bool = False  # replace an existing output (only once the new one is complete)
    patch: Optional[Path] = None  # migrate: also write the migration as one patch of the input tree
