"""gpu2npu's CPU stand-in for ``torch_npu``: runs code migrated to Ascend NPUs on a machine without
one, with the real torch doing the work on the CPU. It is not Huawei's torch_npu and shares no code
with it; see ``gpu2npu.standin`` for what it emulates and what it cannot.

Importing it (as migrated code does right after ``import torch``) sets up, in this process:
``torch.npu`` (= ``torch_npu.npu``), 'npu' devices placed on the CPU, ``Tensor.npu()``/``is_npu``,
the ``hccl`` distributed backend on gloo, ``torch_npu.profiler``, ``torch_npu.optim`` and the
``torch_npu.npu_*`` operators (reference implementations, or a NotImplementedError when called).
"""

import sys


def _autoload() -> None:
    """torch (2.5 and later) calls this on ``import torch`` through the ``torch.backends`` entry
    point of the stand-in's dist-info, as it autoloads an installed torch_npu: importing this
    module does all there is to do. Defined before ``import torch``, which calls it while this
    module is still loading when a program imports torch_npu first."""


try:
    import torch
except ImportError as exc:  # the stand-in emulates the NPU, never torch itself
    raise ImportError(
        "the gpu2npu stand-in for torch_npu needs PyTorch: install torch (a CPU build is enough) "
        "in the environment that runs the migrated program"
    ) from exc

from torch_npu import _devices, _ops, distributed, npu, optim, profiler  # noqa: E402
from torch_npu.npu import amp as _amp  # noqa: E402

__version__ = f"{torch.__version__.split('+')[0]}+gpu2npu.standin"
IS_GPU2NPU_STANDIN = True

globals().update(_ops.REFERENCE)

_devices.install(npu)
sys.modules.setdefault("torch.npu.amp", npu.amp)  # one module, however it is imported
_amp.install()
distributed.install()
for _name, _function in _ops.REFERENCE.items():
    if not hasattr(torch, _name):  # older torch_npu put its operators on torch as well
        setattr(torch, _name, _function)


def __getattr__(name: str):
    if name.startswith("npu_"):
        return _ops.missing(name)
    raise AttributeError(f"module 'torch_npu' has no attribute {name!r} (gpu2npu stand-in)")


__all__ = ["distributed", "npu", "optim", "profiler", *_ops.REFERENCE]
