"""The validated settings of one run, built once by the CLI and never changed after."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Tuple


@dataclass(frozen=True)
class MigrateOptions:
    input: Path
    output: Path
    version: str
    rule_files: Tuple[str, ...] = ()
    disabled_rules: Tuple[str, ...] = ()
    jobs: int = 0  # 0: one worker per core
    force: bool = False
    diff: bool = False
    progress: bool = False

    @property
    def workers(self) -> int:
        return self.jobs if self.jobs > 0 else (os.cpu_count() or 1)
