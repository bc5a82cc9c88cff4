"""The emulated machine: how many NPUs it has, which one is current, and what a device value
names. Shared by the device placement (``_devices``) and ``torch.npu``."""

from __future__ import annotations

import os
import threading

import torch

DEVICE_TYPE = "npu"
CUDA_TYPE = "cuda"
DEVICES_VARIABLE = "GPU2NPU_STANDIN_DEVICES"
VISIBLE_VARIABLE = "ASCEND_RT_VISIBLE_DEVICES"

_count = None
_count_lock = threading.Lock()
_current = 0
_cuda_is_npu = False  # set once torch_npu.contrib.transfer_to_npu is imported


def treat_cuda_as_npu() -> None:
    """From now on 'cuda' devices name the emulated NPUs (automatic migration)."""
    global _cuda_is_npu
    _cuda_is_npu = True


def cuda_is_npu() -> bool:
    return _cuda_is_npu


def _npu_types() -> tuple:
    return (DEVICE_TYPE, CUDA_TYPE) if _cuda_is_npu else (DEVICE_TYPE,)


def _installed_devices() -> int:
    text = os.environ.get(DEVICES_VARIABLE, "1").strip() or "1"
    try:
        count = int(text)
    except ValueError:
        raise RuntimeError(
            f"{DEVICES_VARIABLE}={text!r} is not a number of NPUs; set it to 0, 1, 2, ..."
        ) from None
    if count < 0:
        raise RuntimeError(f"{DEVICES_VARIABLE}={text!r}: the number of NPUs cannot be negative")
    return count


def _visible(count: int) -> int:
    """ASCEND_RT_VISIBLE_DEVICES narrows the installed NPUs, as on a real machine."""
    text = os.environ.get(VISIBLE_VARIABLE)
    if text is None:
        return count
    ids = [part.strip() for part in text.split(",") if part.strip()]
    return sum(1 for part in ids if part.isdigit() and int(part) < count)


def device_count() -> int:
    """Read once, at the first query (a real runtime reads the variables when it starts)."""
    global _count
    if _count is None:
        with _count_lock:
            if _count is None:
                _count = _visible(_installed_devices())
    return _count


def check_index(index: int) -> int:
    count = device_count()
    if not 0 <= index < count:
        raise RuntimeError(
            f"invalid NPU device index {index}: the gpu2npu stand-in emulates {count} NPU(s) "
            f"(set {DEVICES_VARIABLE} or run with 'gpu2npu run --devices N')"
        )
    return index


def current_device() -> int:
    return _current


def set_current_device(index: int) -> None:
    global _current
    _current = check_index(index)


def index_of(device, optional: bool = False):
    """The NPU index a device value names: None, an int, 'npu', 'npu:N', a torch.device or a
    torch.npu.device context manager (nanotron's ``torch.npu.set_device(torch.npu.device(i))``)."""
    if device is None:
        return None if optional else _current
    if isinstance(device, bool):
        raise ValueError(f"not an NPU device: {device!r}")
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device) and device.type in _npu_types():
        return _current if device.index is None else device.index
    from torch_npu.npu import device as device_manager  # imports this module: read at call time

    if isinstance(device, device_manager):
        return device.idx
    raise ValueError(f"expected an NPU device ('npu', 'npu:N' or an index), got {device!r}")


def is_npu_device(value) -> bool:
    """True for 'npu', 'npu:N' and torch.device('npu', N) (and the same with 'cuda' after
    transfer_to_npu); other values are left alone."""
    if isinstance(value, torch.device):
        return value.type in _npu_types()
    if isinstance(value, str):
        kind, colon, index = value.partition(":")
        return kind in _npu_types() and (not colon or index.isdigit())
    return False
