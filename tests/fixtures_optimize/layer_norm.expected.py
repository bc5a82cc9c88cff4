"""apex's FusedLayerNorm becomes torch's LayerNorm wherever it is named; FusedRMSNorm stays."""
import torch
import torch_npu
import apex
from torch.nn import LayerNorm as FusedLayerNorm
from torch.nn import LayerNorm as FLN
from apex.normalization import FusedRMSNorm
from torch.nn import LayerNorm as Norm


class Block(torch.nn.Module):
    def __init__(self, size):
        super().__init__()
        self.norm = FusedLayerNorm(size, eps=1e-6)
        self.other = torch.nn.LayerNorm(size, elementwise_affine=False)
        self.third = FLN(size)
        self.rms = FusedRMSNorm(size)


class Subclass(Norm):
    pass


def is_norm(module):
    return isinstance(module, torch.nn.LayerNorm)
