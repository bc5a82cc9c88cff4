"""``torch_npu.optim`` of the gpu2npu stand-in: the fused NPU optimizers are torch's optimizers
with the same update (the fusion only changes speed on an NPU), taking exactly the parameters
torch_npu documents (Ascend/op-plugin docs, torch_npu-optim-NpuFused*.md), so a migrated call that
passes one torch_npu does not take fails here as it would on an NPU, and so does
``zero_grad(set_to_none=True)``. Like torch_npu's (npu_fused_optim_base.py), they combine the
gradients once, at their first step, and step from those alone afterwards. torch_npu's optimizers
that have no torch counterpart (NpuFusedLamb, NpuFusedBertAdam, ...) are not emulated."""

from __future__ import annotations

import torch


class _Fused:
    """torch_npu's fused optimizers clear the gradients in place: ``zero_grad`` defaults to
    ``set_to_none=False`` and raises on True. Their first step copies the gradients the parameters
    have into one buffer per dtype, each ``p.grad`` a view of it, and every later step reads that
    buffer only: a parameter that had no gradient then is never updated, and a gradient made afresh
    after something set ``p.grad`` to None (a module's ``zero_grad()``, from torch 2.0) is not
    seen: the step repeats the buffer's last values."""

    _combined = None  # id(parameter) -> the view of the buffer its gradient was at the first step

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        params = [p for group in self.param_groups for p in group["params"]]
        if self._combined is None:
            self._combined = _combined_gradients(params)
        current = [p.grad for p in params]
        for p in params:
            p.grad = self._combined.get(id(p))
        try:
            super().step()
        finally:
            for p, grad in zip(params, current):
                p.grad = grad
        return loss

    def zero_grad(self, set_to_none=False):
        if set_to_none:
            raise ValueError("set_to_none is not supported in fused optimizers")
        for view in (self._combined or {}).values():
            view.zero_()
        super().zero_grad(set_to_none=False)


def _combined_gradients(params) -> dict:
    """The parameters' gradients copied into one buffer per dtype, each ``p.grad`` made its view."""
    by_dtype = {}
    for p in params:
        if p.grad is not None:
            by_dtype.setdefault(p.grad.dtype, []).append(p)
    combined = {}
    for group in by_dtype.values():
        buffer = torch.cat([p.grad.reshape(-1) for p in group])
        offset = 0
        for p in group:
            view = buffer[offset : offset + p.grad.numel()].view_as(p.grad)
            offset += p.grad.numel()
            p.grad = view
            combined[id(p)] = view
    return combined


class NpuFusedAdam(_Fused, torch.optim.Adam):
    """torch.optim.Adam."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)


class NpuFusedAdamW(_Fused, torch.optim.AdamW):
    """torch.optim.AdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)


class NpuFusedSGD(_Fused, torch.optim.SGD):
    """torch.optim.SGD; ``lr`` has no default."""

    def __init__(self, params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False):
        super().__init__(params, lr, momentum, dampening, weight_decay, nesterov)


class NpuFusedRMSprop(_Fused, torch.optim.RMSprop):
    """torch.optim.RMSprop."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
        super().__init__(params, lr, alpha, eps, weight_decay, momentum, centered)


class NpuFusedAdadelta(_Fused, torch.optim.Adadelta):
    """torch.optim.Adadelta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0):
        super().__init__(params, lr, rho, eps, weight_decay)


__all__ = ["NpuFusedAdadelta", "NpuFusedAdam", "NpuFusedAdamW", "NpuFusedRMSprop", "NpuFusedSGD"]
