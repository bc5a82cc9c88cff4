"""``torch_npu.distributed`` of the gpu2npu stand-in: the ``hccl`` backend of ``torch.distributed``
runs on gloo (collectives on CPU tensors, across processes as HCCL would across NPUs), and
``DistributedDataParallel(model, device_ids=[rank])`` accepts the CPU-placed model by dropping
``device_ids`` and ``output_device`` (torch refuses them for CPU modules); ``barrier(device_ids=...)``
synchronises on the CPU."""

from __future__ import annotations

import functools

import torch

BACKEND = "hccl"


def is_hccl_available() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_gloo_available()


def _hccl_on_gloo(store, rank, world_size, timeout):
    return torch.distributed.ProcessGroupGloo(store, rank, world_size, timeout)


def _without_device_ids(original_init):
    @functools.wraps(original_init)
    def init(self, module, device_ids=None, output_device=None, *args, **kwargs):
        on_cpu = all(p.device.type == "cpu" for p in module.parameters())
        if on_cpu:
            device_ids, output_device = None, None
        original_init(self, module, device_ids, output_device, *args, **kwargs)

    return init


def _barrier_on_cpu(original_barrier):
    """barrier(device_ids=[i]) would make torch allocate its token tensor on npu:i; the stand-in's
    collectives run on the CPU, where barrier() without device_ids puts it."""

    @functools.wraps(original_barrier)
    def barrier(group=None, async_op=False, device_ids=None, *args, **kwargs):
        return original_barrier(group, async_op, None, *args, **kwargs)

    return barrier


def install() -> None:
    if not is_hccl_available():
        return
    dist = torch.distributed
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND, _hccl_on_gloo, devices=["cpu", "npu"])
    dist.is_hccl_available = is_hccl_available
    dist.barrier = dist.distributed_c10d.barrier = _barrier_on_cpu(dist.distributed_c10d.barrier)
    ddp = torch.nn.parallel.DistributedDataParallel
    ddp.__init__ = _without_device_ids(ddp.__init__)


def __getattr__(name: str):
    # torch_npu.distributed re-exports torch.distributed (Backend.HCCL, init_process_group, ...)
    return getattr(torch.distributed, name)
