"""``torch_npu.optim`` of the gpu2npu stand-in: the fused NPU optimizers are torch's optimizers with
the same arguments and the same update (the fusion only changes speed on an NPU). torch_npu's
optimizers that have no torch counterpart (NpuFusedLamb, NpuFusedBertAdam, ...) are not emulated."""

from __future__ import annotations

import torch


class NpuFusedAdam(torch.optim.Adam):
    """torch.optim.Adam."""


class NpuFusedAdamW(torch.optim.AdamW):
    """torch.optim.AdamW."""


class NpuFusedSGD(torch.optim.SGD):
    """torch.optim.SGD."""


class NpuFusedRMSprop(torch.optim.RMSprop):
    """torch.optim.RMSprop."""


class NpuFusedAdadelta(torch.optim.Adadelta):
    """torch.optim.Adadelta."""


__all__ = ["NpuFusedAdadelta", "NpuFusedAdam", "NpuFusedAdamW", "NpuFusedRMSprop", "NpuFusedSGD"]
