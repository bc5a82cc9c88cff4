"""Migration targets (``--target``): what the migrated tree runs on. A target is the rule set it
applies (folders or files of rules/, or those of the migration mode) and the modes it works
with; its import policy is rules too (``import torch_npu`` for npu, guarded or autoloaded for
portable). One module per target in this package, found by registration (its ``TARGET``); the
engine knows no target by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Tuple

from gpu2npu.errors import UserError
from gpu2npu.registry import named, registered

DEFAULT = "npu"


@dataclass(frozen=True)
class Target:
    name: str
    help: str  # one line for --help
    order: int = 0  # place in the help
    # rules/ folders ("" is rules/ itself) or single .yaml files; None: those of the mode
    rule_paths: Optional[Tuple[str, ...]] = None
    modes: Optional[FrozenSet[str]] = None  # the migration modes it works with; None: every mode
    gates_unknown_apis: bool = True  # check: APIs not validated on the NPU are findings

    def rules_for(self, style) -> Tuple[str, ...]:
        """The built-in rules a migration in ``style`` (gpu2npu.styles) applies for this target."""
        return style.rule_folders if self.rule_paths is None else self.rule_paths

    def check_mode(self, mode: str) -> None:
        if self.modes is not None and mode not in self.modes:
            raise UserError(
                f"--target {self.name} does not work with --mode {mode}",
                f"use --mode {' or '.join(sorted(self.modes))}, or --target {DEFAULT}",
            )


_TARGETS: List[Target] = []


def targets() -> List[Target]:
    """Every target, in help order (imported once, on first use)."""
    if not _TARGETS:
        _TARGETS.extend(registered(__name__, __path__, "TARGET"))
    return _TARGETS


def target_named(name: str) -> Target:
    return named(targets(), name, "target")
