"""``torch.npu.amp`` of the gpu2npu stand-in.

``autocast`` is ``torch.autocast('npu', ...)``: it is entered and left as on an NPU, but NPU
tensors live on the CPU, which the NPU autocast does not touch, so everything stays in the dtype
the program made it (float32): losses remain comparable with a CPU run. ``GradScaler`` is torch's
own scaler on the CPU (scaling by a power of two leaves the gradients bit for bit unchanged once
unscaled), plus torch_npu's ``dynamic=False`` (a static loss scale). FSDP's ``ShardedGradScaler``
is replaced by the NPU's, which takes no ``device``, as torch_npu does.
"""

from __future__ import annotations

import functools

import torch

from torch_npu import _runtime

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class autocast(torch.amp.autocast):
    """torch_npu.npu.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=torch.float16, cache_enabled=True):
        super().__init__("npu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """torch_npu.npu.amp.GradScaler: torch's scaler working on the CPU; ``dynamic=False`` keeps
    ``init_scale`` fixed (steps with inf/NaN gradients are still skipped)."""

    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
        dynamic=True,
    ):
        super().__init__(
            "cpu",
            init_scale=init_scale,
            growth_factor=growth_factor,
            backoff_factor=backoff_factor,
            growth_interval=growth_interval,
            enabled=enabled,
        )
        self.dynamic = dynamic

    def update(self, new_scale=None):
        if not self.dynamic and new_scale is None and self._enabled and self._scale is not None:
            new_scale = self._scale.detach().clone()  # static loss scale: keep it
        return super().update(new_scale)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.amp.custom_fwd for the CPU: the stand-in's autocast never lowers precision, so
    ``cast_inputs`` changes nothing, as in the CPU run of the original program."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return torch.amp.custom_fwd(fwd, device_type="cpu", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    if bwd is None:
        return custom_bwd
    return torch.amp.custom_bwd(bwd, device_type="cpu")


def _npu_device_type_means_cpu(original_init):
    """torch.amp.GradScaler('npu') (and 'cuda', its default, after transfer_to_npu) keeps its state
    on the CPU, where the NPU tensors are."""

    @functools.wraps(original_init)
    def init(self, device="cuda", *args, **kwargs):
        if isinstance(device, str) and _runtime.is_npu_device(device):
            device = "cpu"
        original_init(self, device, *args, **kwargs)

    return init


def _sharded_grad_scaler():
    """torch_npu's own FSDP ShardedGradScaler, which it puts in place of torch's on import (up
    to its 2.8 line): the NPU's, with no ``device`` parameter."""
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    class _ShardedGradScaler(ShardedGradScaler):
        def __init__(
            self,
            init_scale=2.0**16,
            backoff_factor=0.5,
            growth_factor=2.0,
            growth_interval=2000,
            enabled=True,
            process_group=torch.distributed.group.WORLD,
        ):
            # torch's parameters, in its order, after the device (the NPU's: on the CPU here)
            options = (init_scale, backoff_factor, growth_factor, growth_interval, enabled, process_group)
            super().__init__("cpu", *options)

    _ShardedGradScaler.__name__ = _ShardedGradScaler.__qualname__ = "ShardedGradScaler"
    return _ShardedGradScaler


def install() -> None:
    torch.amp.GradScaler.__init__ = _npu_device_type_means_cpu(torch.amp.GradScaler.__init__)
    if torch.distributed.is_available():
        import torch.distributed.fsdp.sharded_grad_scaler as sharded

        sharded.ShardedGradScaler = _sharded_grad_scaler()
