"""Torch is optional, as in Hugging Face's modules: bound only where it is installed."""
import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

if importlib.util.find_spec("torch") is not None:
    import torch
    import torch.nn as nn
    ACCELERATOR = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else None
    DEVICE_TYPE = ACCELERATOR or 'cpu'
else:
    torch = nn = None


def device_for(index):
    return torch.device(DEVICE_TYPE, index) if torch.accelerator.is_available() else torch.device("cpu")
