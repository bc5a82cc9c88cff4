"""apex's FusedLayerNorm becomes torch's LayerNorm wherever it is named; FusedRMSNorm stays."""
import torch
import apex
from apex.normalization import FusedLayerNorm
from apex.normalization.fused_layer_norm import FusedLayerNorm as FLN
from apex.normalization import FusedLayerNorm as Norm, FusedRMSNorm


class Block(torch.nn.Module):
    def __init__(self, size):
        super().__init__()
        self.norm = FusedLayerNorm(size, eps=1e-6)
        self.other = apex.normalization.FusedLayerNorm(size, elementwise_affine=False)
        self.third = FLN(size)
        self.rms = FusedRMSNorm(size)


class Subclass(Norm):
    pass


def is_norm(module):
    return isinstance(module, apex.normalization.FusedLayerNorm)
