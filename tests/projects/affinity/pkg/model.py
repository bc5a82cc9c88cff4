import torch as t
from torch import matmul as mm
from torch import nn
import torch.nn.functional as F
from flash_attn import flash_attn_func

from .layers import DropPath, channel_shuffle, multiclass_nms
from pkg.layers import Mish


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = DropPath(0.1)
        self.act = Mish()
        self.silu = nn.SiLU()

    def forward(self, a, b, mask, value):
        y = t.matmul(a, b)
        z = mm(a,
               b)
        a[mask] = value  # mask is a parameter, not known to be a condition: no row
        y = F.gelu(channel_shuffle(y, 2))
        multiclass_nms(a, b, 0.5, None, 10, None, False)
        return flash_attn_func(y, z, z)


def shadowed(t, matmul):
    # t and matmul are parameters here, not torch.
    return t.matmul(matmul(1, 2))


def clamp_negative(x):
    negative = x < 0
    x[negative] = 0
    return x
