"""Where the built-in rules are: inside the installed wheel, or rules/ of a source checkout."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def builtin_rules_dir() -> Path:
    package_dir = Path(__file__).resolve().parent.parent
    installed = package_dir / "_rules"  # placed there by the wheel build (pyproject force-include)
    if installed.is_dir():
        return installed
    checkout = package_dir.parent.parent / "rules"  # src/gpu2npu -> repository root
    if checkout.is_dir():
        return checkout
    raise RuntimeError(f"built-in rules not found next to {package_dir}; the installation is incomplete")
