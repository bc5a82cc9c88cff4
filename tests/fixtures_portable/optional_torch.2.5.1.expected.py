"""Torch is optional, as in Hugging Face's modules: bound only where it is installed."""
import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

if importlib.util.find_spec("torch") is not None:
    import torch
    import torch.nn as nn
    ACCELERATOR = next((t for t in ('cuda', 'npu') if getattr(torch, t, None) and getattr(torch, t).is_available()), None)
    DEVICE_TYPE = ACCELERATOR or 'cpu'
    DEVICE_MODULE = getattr(torch, ACCELERATOR or 'cuda')
else:
    torch = nn = None


def device_for(index):
    return torch.device(DEVICE_TYPE, index) if DEVICE_MODULE.is_available() else torch.device("cpu")
