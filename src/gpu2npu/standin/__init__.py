"""A CPU stand-in for ``torch_npu``: run migrated code on a machine without an Ascend NPU (CI, a
laptop) and compare it with the original, with the real torch computing on the CPU.

The package ``site/torch_npu/`` is importable as ``torch_npu`` only when ``SITE_DIR`` is on
``sys.path`` (``gpu2npu run`` puts it on PYTHONPATH, so child processes inherit it). It imports
torch and nothing of gpu2npu, so it works in any environment with torch, and migrating never
needs it. It is written from torch_npu's public documentation, not from its code. Tested with torch
2.13.0 (CPU build), the one the test extra installs; older releases are untested.
``torch_npu.IS_GPU2NPU_STANDIN`` is True. Its dist-info in the same folder carries the
``torch.backends`` entry point, so torch 2.5 and later load it on ``import torch``, as they load an
installed torch_npu: a tree migrated with ``--target portable`` runs on the emulated NPU unchanged.

What is emulated
----------------
* ``torch.npu`` is ``torch_npu.npu``: ``is_available()``, ``device_count()`` (environment variable
  GPU2NPU_STANDIN_DEVICES, default 1, narrowed by ASCEND_RT_VISIBLE_DEVICES), ``current_device``,
  ``set_device``, ``device(...)``, ``synchronize``, ``get_device_name``, ``get_device_properties``
  (fields ``name``, ``total_memory`` (64 GiB), ``multi_processor_count`` (1)),
  ``get_device_capability`` (None, as on an NPU), ``is_bf16_supported``, ``set_compile_mode``.
* Memory statistics (``memory_allocated``, ``max_memory_allocated``, ``memory_reserved``,
  ``memory_stats``, ``memory_summary``, ``reset_peak_memory_stats``, ``empty_cache``, ...): all zero,
  memory is not tracked; ``mem_get_info`` reports 64 GiB free of 64 GiB.
* Random state: ``manual_seed``, ``manual_seed_all``, ``seed``, ``initial_seed``,
  ``get_rng_state``/``set_rng_state`` (``_all`` too), ``default_generators`` keep one bookkeeping
  generator per NPU and never touch torch's CPU generator, which draws the numbers of "NPU"
  tensors exactly as it does for the original program run on the CPU.
* ``Stream``, ``Event`` (host timing for ``elapsed_time``), ``current_stream``, ``default_stream``,
  ``stream(...)``, ``set_stream``: work is complete when queued.
* amp: ``torch_npu.npu.amp.autocast`` (context manager and decorator), ``torch.autocast('npu')`` and
  ``torch.amp.autocast('npu')`` are entered as on an NPU but do not lower precision: NPU tensors
  live on the CPU, which the NPU autocast leaves alone, so losses stay comparable with a float32
  CPU run. ``GradScaler`` is torch's scaler on the CPU (scale, unscale_, step, update, state_dict,
  get_scale, ...) plus torch_npu's ``dynamic=False``; ``torch.amp.GradScaler('npu')`` works too.
* Devices: ``torch.device('npu')``, ``'npu:N'`` parse (the PrivateUse1 backend renamed to "npu") and
  are accepted wherever torch takes a device (factories' ``device=``, ``Tensor.to``, ``Module.to``,
  ``to_empty``, ``torch.load(map_location=...)``, ``torch.Generator(device=...)``, ``with
  torch.device('npu')``); the tensor is placed on the CPU. An index beyond the emulated device count
  fails as on a real machine. ``Tensor.npu()``, ``Module.npu()``, ``PackedSequence.npu()`` and
  storages' ``npu()`` are no-op moves; ``Tensor.pin_memory()`` returns the tensor, and
  ``DataLoader(pin_memory=True)`` works.
* ``torch.distributed``: backend ``"hccl"`` (and ``dist.Backend.HCCL``, ``dist.is_hccl_available()``)
  runs on gloo, its reducing collectives refusing what HCCL does not reduce (float64);
  ``DistributedDataParallel(model, device_ids=[rank])`` drops ``device_ids`` and
  ``output_device`` for the CPU-placed model; ``torch_npu._C._distributed_c10d.ProcessGroupHCCL`` is
  a subclass of gloo's process group (its ``Options()`` takes no argument). Multiprocessing spawn
  and torchrun work.
* ``torch_npu.profiler``: ``profile`` (profiles the CPU whatever the activities; no ``key_averages``
  nor ``events``, as torch_npu's), ``schedule``,
  ``tensorboard_trace_handler`` (torch's Chrome trace), ``ProfilerActivity`` (``CPU``, ``NPU``),
  ``ProfilerAction``, ``_ExperimentalConfig`` and ``experimental_config`` (accepted, ignored).
* ``torch_npu.optim``: ``NpuFusedAdam``, ``NpuFusedAdamW``, ``NpuFusedSGD``, ``NpuFusedRMSprop``,
  ``NpuFusedAdadelta`` are torch's optimizers with the same arguments.
* ``apex.amp`` of Ascend's apex (``site/apex``): ``initialize`` (NVIDIA's parameters and
  ``combine_grad``) casts nothing; ``scale_loss`` scales by a power of two and unscales exactly.
  ``apex.normalization`` and apex's other CUDA kernels are missing, as in Ascend's apex.
* Operators, reference implementations in plain torch: ``npu_rms_norm`` (returns ``(y, rstd)``),
  ``npu_rotary_mul`` (``half``/``interleave``), ``npu_swiglu``, ``npu_fusion_attention`` (layouts
  BSH, SBH, BSND, BNSD; GQA; ``sparse_mode`` 0-3, the causal modes 2 and 3 only with the documented
  2048 x 2048 compressed mask; returns the 7 outputs with zero seed/offset),
  ``npu_silu``, ``npu_gelu``, ``npu_mish``, ``npu_confusion_transpose``, ``npu_transpose``,
  ``npu_dtype_cast``, ``npu_format_cast`` (identity), ``get_npu_format``. Any other ``npu_*`` name
  resolves to a callable that raises NotImplementedError when called.
* ``torch_npu.contrib.transfer_to_npu`` (automatic migration): an unchanged CUDA program with
  ``import torch_npu`` and ``from torch_npu.contrib import transfer_to_npu`` at its top runs on the
  emulated NPUs. ``torch.cuda`` (and ``torch.cuda.amp``, ``torch.cuda.random``) answers with
  ``torch.npu``; ``'cuda'`` devices are NPU devices, placed on the CPU (factories, ``to``,
  ``torch.load`` and checkpoints saved on CUDA, ``torch.Generator``, ``torch.autocast('cuda')``,
  ``torch.amp.GradScaler('cuda')``); ``Tensor.cuda()``/``Module.cuda()``/``is_cuda`` are the NPU
  ones; the ``nccl`` backend runs as ``hccl``; ``torch.jit.script`` returns its argument; triton
  is reported missing; ``torch.profiler`` is ``torch_npu.profiler``. Its docstring lists the rest.

What it cannot do
-----------------
* ``tensor.device`` is ``cpu`` and ``tensor.device.type == 'npu'`` is False; ``x.device ==
  torch.device('npu:0')`` is False. ``Tensor.is_npu`` is True for every CPU tensor (so also after
  ``.cpu()``). ``Tensor.is_pinned()`` is False.
* Only speed and numerics of the CPU: no float16 autocast, no NPU kernels, no HCCL; results match a
  CPU run of the original program, not an NPU's.
* Device selection is bookkeeping: ``set_device`` changes what ``current_device`` says, not where
  tensors go. The device mode is per thread: it is set up in the importing thread and in every
  ``threading.Thread`` started afterwards, not in threads started before the import or by C code.
* ``torch.npu`` names not listed above (graphs, ``NPUPluggableAllocator``, memory pools, IPC, ...)
  raise AttributeError naming the stand-in. ``torch.nn.DataParallel``, ``SyncBatchNorm`` across
  more than one process (torch has no CPU kernels for it), ``torch.compile`` and most of
  ``torch.accelerator`` beyond device queries, ``set_device_index`` and ``synchronize`` are not
  emulated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Mapping

SITE_DIR = Path(__file__).resolve().parent / "site"
DEVICES_VARIABLE = "GPU2NPU_STANDIN_DEVICES"


def standin_environment(base: Mapping[str, str], devices: int) -> Dict[str, str]:
    """``base`` with the stand-in's folder first on PYTHONPATH and the number of NPUs to emulate."""
    environment = dict(base)
    paths = [str(SITE_DIR)] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    environment["PYTHONPATH"] = os.pathsep.join(paths)
    environment[DEVICES_VARIABLE] = str(devices)
    return environment
