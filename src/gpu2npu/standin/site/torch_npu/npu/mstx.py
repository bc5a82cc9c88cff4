"""torch_npu.npu.mstx: markers and ranges for the Ascend profiler (the counterpart of NVTX). On the
CPU nothing collects them: a mark is dropped, a range gets an id that ending it gives back."""

from __future__ import annotations

import itertools

_ids = itertools.count(1)


def mark(message: str = "", stream=None, domain: str = "default") -> None:
    """An instantaneous marker."""


def range_start(message: str = "", stream=None, domain: str = "default") -> int:
    """Opens a range; returns the id that range_end takes."""
    return next(_ids)


def range_end(range_id: int, domain: str = "default") -> None:
    """Closes the range that range_start opened."""
