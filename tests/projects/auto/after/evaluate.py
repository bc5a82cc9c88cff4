"""Evaluates: no torch import here, but the project module it imports uses torch."""
import torch_npu
from torch_npu.contrib import transfer_to_npu
from lib.helpers import seed_all

if __name__ == "__main__":
    seed_all(1)
