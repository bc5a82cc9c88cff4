"""``torch_npu.contrib.transfer_to_npu`` of the gpu2npu stand-in: automatic migration. Importing it
(after ``import torch_npu``, or alone: it imports torch_npu itself) makes an unchanged CUDA program
run on the emulated NPUs, as Huawei's runtime patcher makes it run on real ones. Importing it again
changes nothing.

What is redirected
------------------
* ``torch.cuda`` answers with ``torch.npu``: every function and class the stand-in's ``torch.npu``
  emulates (``is_available``, ``device_count``, ``current_device``, ``set_device``, ``device``,
  ``synchronize``, ``manual_seed(_all)`` and the rest of the random state, ``default_generators``,
  memory statistics, ``get_device_name``, ``get_device_properties``, ``Stream``, ``Event``, ...) is
  set on the ``torch.cuda`` module object, so code that did ``import torch`` long before sees it.
  ``torch.cuda.random`` likewise; ``torch.cuda.amp`` (also ``from torch.cuda.amp import ...``) gives
  the NPU ``autocast``, ``GradScaler``, ``custom_fwd`` and ``custom_bwd``. Names the stand-in does
  not emulate stay CUDA's (graphs, ``nvtx``, ``nccl``, ...) and fail as on a CPU build of torch.
* ``'cuda'`` devices are NPU devices: ``'cuda'``, ``'cuda:N'`` and ``torch.device('cuda', N)``
  (which itself stays a cuda device object) are accepted wherever an NPU device is (factories'
  ``device=``, ``Tensor.to``, ``Module.to``, ``to_empty``, ``with torch.device('cuda')``,
  ``torch.Generator(device='cuda')``, ``torch.load(map_location=...)`` and checkpoints saved on
  CUDA) and place the tensor on the CPU; an index beyond the emulated device count fails.
  ``Tensor.cuda()``, ``Module.cuda()``, ``PackedSequence.cuda()`` and storages' ``cuda()`` are the
  NPU no-op moves; ``Tensor.is_cuda`` is ``is_npu`` (True for every CPU tensor).
* amp: ``torch.autocast('cuda')`` and ``torch.amp.autocast('cuda')`` are the NPU autocast (entered,
  no precision lowered on the CPU); ``torch.amp.GradScaler('cuda')`` (and its default device)
  scales on the CPU.
* ``torch.distributed``: backend ``nccl`` (also inside ``'cpu:gloo,cuda:nccl'``) becomes ``hccl``
  (gloo underneath) in ``init_process_group`` and ``new_group``, whose ``device_id`` is dropped (the
  collectives run on the CPU); ``is_nccl_available`` is ``is_hccl_available``;
  ``ProcessGroupNCCL`` is ``ProcessGroupHCCL`` (torch_npu's from its 2.7.1 branch);
  ``DistributedDataParallel(model, device_ids=[i])`` works as for NPUs.
* ``torch.jit.script`` and ``torch.jit.script_method`` return their argument unchanged (with a
  warning), and triton is reported missing (``torch.utils._triton.has_triton``), as the real
  patcher does.
* ``torch.profiler.profile``, ``schedule`` and ``tensorboard_trace_handler`` are torch_npu.profiler's;
  ``ProfilerActivity.CUDA`` is ``ProfilerActivity.NPU``.

What is not
-----------
* ``torch.cuda`` names not listed above, ``torch.backends.cuda``/``cudnn`` settings (accepted,
  unused), CUDA extensions and kernels (apex, flash-attn, custom ops) and ``torch.nn.DataParallel``.
* ``x.device`` is ``cpu``: code comparing it with ``torch.device('cuda')`` sees a difference.
* ``torch.is_autocast_enabled()`` without a device still asks about CUDA's autocast (False).
* Names taken before the import (``from torch.cuda import is_available`` above it) keep CUDA's.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings

import torch
import torch.distributed
import torch.profiler

from torch_npu import _runtime, npu
from torch_npu import distributed as npu_distributed
from torch_npu import profiler as npu_profiler
from torch_npu._C._distributed_c10d import ProcessGroupHCCL

NCCL = "nccl"


# -- torch.cuda ----------------------------------------------------------------------------------


def _emulated_names(module) -> dict:
    """The public functions and classes of one of the stand-in's modules."""
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and callable(value) and not isinstance(value, types.ModuleType)
    }


def _set_attributes(target, values: dict) -> None:
    for name, value in values.items():
        setattr(target, name, value)


def _redirect_torch_cuda() -> None:
    cuda = torch.cuda
    _set_attributes(cuda, _emulated_names(npu))
    # torch itself calls these (torch.manual_seed, fork_rng, pin memory, tensor sharing)
    _set_attributes(cuda, {"_lazy_init": npu._lazy_init, "_is_in_bad_fork": npu._is_in_bad_fork})
    cuda.default_generators = npu.default_generators
    random = sys.modules["torch.cuda.random"]
    _set_attributes(random, {name: getattr(npu, name) for name in random.__all__})
    amp = {name: getattr(npu.amp, name) for name in npu.amp.__all__}
    for module_name in ("torch.cuda.amp", "torch.cuda.amp.autocast_mode", "torch.cuda.amp.grad_scaler"):
        module = sys.modules.get(module_name)
        if module is not None:
            _set_attributes(module, {name: value for name, value in amp.items() if hasattr(module, name)})


# -- tensors, modules, storages ------------------------------------------------------------------


def _redirect_cuda_methods() -> None:
    torch.Tensor.cuda = torch.Tensor.npu
    torch.Tensor.is_cuda = torch.Tensor.is_npu
    torch.nn.Module.cuda = torch.nn.Module.npu
    torch.nn.utils.rnn.PackedSequence.cuda = torch.nn.utils.rnn.PackedSequence.npu
    for storage in (torch.UntypedStorage, torch.TypedStorage):
        # is_cuda stays False: tensor sharing between processes refuses to pickle CUDA storages
        storage.cuda = storage.npu


# -- autocast ------------------------------------------------------------------------------------


def _npu_autocast(original_init):
    """torch.autocast('cuda') is entered as torch.autocast('npu'), which leaves CPU tensors alone."""

    @functools.wraps(original_init)
    def init(self, device_type, *args, **kwargs):
        if isinstance(device_type, str) and _runtime.is_npu_device(device_type):
            device_type = _runtime.DEVICE_TYPE
        original_init(self, device_type, *args, **kwargs)

    return init


# -- torch.distributed ---------------------------------------------------------------------------


def _hccl_backend(backend):
    if isinstance(backend, str):
        return backend.replace(NCCL, npu_distributed.BACKEND).replace("cuda:", "npu:")
    return backend


def _on_hccl(original):
    """init_process_group / new_group with nccl asked for: hccl (gloo underneath) on the CPU."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def with_hccl(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if "backend" in bound.arguments:
            bound.arguments["backend"] = _hccl_backend(bound.arguments["backend"])
        if bound.arguments.get("device_id") is not None:
            bound.arguments["device_id"] = None  # binding the group to an NPU would allocate there
        return original(*bound.args, **bound.kwargs)

    return with_hccl


def _redirect_distributed() -> None:
    dist = torch.distributed
    if not dist.is_available():
        return
    c10d = dist.distributed_c10d
    for name in ("init_process_group", "new_group"):
        wrapped = _on_hccl(getattr(c10d, name))
        setattr(c10d, name, wrapped)
        setattr(dist, name, wrapped)
    dist.is_nccl_available = c10d.is_nccl_available = npu_distributed.is_hccl_available
    dist.ProcessGroupNCCL = ProcessGroupHCCL  # as torch_npu's transfer_to_npu does from its 2.7.1 branch


# -- torch.jit, triton, profiler -----------------------------------------------------------------


def _script_disabled(obj, *args, **kwargs):
    warnings.warn(
        "torch.jit.script is disabled by torch_npu.contrib.transfer_to_npu: the object runs unscripted",
        stacklevel=2,
    )
    return obj


def _no_triton() -> bool:
    return False


def _disable_jit_and_triton() -> None:
    torch.jit.script = _script_disabled
    torch.jit.script_method = _script_disabled
    try:
        import torch.utils._triton as triton_probe
    except ImportError:  # an older torch without the probe has nothing to tell
        return
    triton_probe.has_triton = triton_probe.has_triton_package = _no_triton


def _redirect_profiler() -> None:
    torch.profiler.profile = npu_profiler.profile
    torch.profiler.schedule = npu_profiler.schedule
    torch.profiler.tensorboard_trace_handler = npu_profiler.tensorboard_trace_handler
    torch.profiler.ProfilerActivity.CUDA = npu_profiler.ProfilerActivity.NPU


# -- installation --------------------------------------------------------------------------------


def _install() -> None:
    if _runtime.cuda_is_npu():
        return  # imported again (or under another name): already in place
    _runtime.treat_cuda_as_npu()
    _redirect_torch_cuda()
    _redirect_cuda_methods()
    torch.amp.autocast.__init__ = _npu_autocast(torch.amp.autocast.__init__)
    _redirect_distributed()
    _disable_jit_and_triton()
    _redirect_profiler()


_install()
