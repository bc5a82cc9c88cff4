"""``torch_npu.distributed`` of the gpu2npu stand-in: the ``hccl`` backend of ``torch.distributed``
runs on gloo (collectives on CPU tensors, across processes as HCCL would across NPUs), and
``DistributedDataParallel(model, device_ids=[rank])`` accepts the CPU-placed model by dropping
``device_ids`` and ``output_device`` (torch refuses them for CPU modules); ``barrier(device_ids=...)``
synchronises on the CPU. Reducing collectives refuse the data types HCCL does not reduce on the
emulated Ascend910B (float64, uint16/32/64, float8: ``checkSupportedDataType`` of torch_npu's
ProcessGroupHCCL; Ascend950 adds float64 and uint64), as torch_npu does: gloo would reduce them."""

from __future__ import annotations

import functools
import inspect

import torch

BACKEND = "hccl"
# torch.distributed's reducing collectives -> the name torch_npu's error gives each
REDUCING = {
    "all_reduce": "allreduce",
    "all_reduce_coalesced": "allreduce_coalesced",
    "reduce": "reduce",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_tensor": "_reduce_scatter_base",
}
# what HCCL reduces on Ascend910B, by torch's name (bool and uint8 are reduced as uint8)
REDUCED_TYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "bfloat16")


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


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _backend(group):
    try:
        return torch.distributed.get_backend(group)
    except (RuntimeError, ValueError):
        return None  # no process group: the collective itself says so


def _reduced_by_hccl(original, function_name: str):
    """A reducing collective that, on an hccl group, refuses what HCCL cannot reduce."""
    reduced = {getattr(torch, name) for name in REDUCED_TYPES}
    signature = inspect.signature(original)

    @functools.wraps(original)
    def collective(*args, **kwargs):
        passed = signature.bind_partial(*args, **kwargs).arguments
        if _backend(passed.get("group")) == BACKEND:
            for tensor in _tensors(list(passed.values())):
                if tensor.dtype not in reduced:
                    raise RuntimeError(f"HCCL {function_name}: Unsupported data type {tensor.dtype}")
        return original(*args, **kwargs)

    return collective


def install() -> None:
    if not is_hccl_available():
        return
    dist = torch.distributed
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND, _hccl_on_gloo, devices=["cpu", "npu"])
    dist.is_hccl_available = is_hccl_available
    dist.barrier = dist.distributed_c10d.barrier = _barrier_on_cpu(dist.distributed_c10d.barrier)
    for name, function_name in REDUCING.items():
        original = getattr(dist.distributed_c10d, name, None)
        if original is not None:
            wrapped = _reduced_by_hccl(original, function_name)
            setattr(dist, name, wrapped)
            setattr(dist.distributed_c10d, name, wrapped)
    ddp = torch.nn.parallel.DistributedDataParallel
    ddp.__init__ = _without_device_ids(ddp.__init__)


def __getattr__(name: str):
    # torch_npu.distributed re-exports torch.distributed (Backend.HCCL, init_process_group, ...)
    return getattr(torch.distributed, name)
