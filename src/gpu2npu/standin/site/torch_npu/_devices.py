"""Device placement: 'npu' parses as a device everywhere, and whatever is asked for on an NPU is
placed on the CPU.

* ``torch.utils.rename_privateuse1_backend("npu")`` makes ``torch.device('npu:1')`` parse, and the
  ``torch.npu`` module is registered for it (``torch.get_device_module('npu')``, autocast,
  ``torch.accelerator``).
* A ``TorchFunctionMode`` rewrites NPU devices in the arguments of every torch function (factories'
  ``device=``, ``Tensor.to``, ``Module.to`` through it, ...) to the CPU. Modes are per thread, so the
  mode is entered in the importing thread and in every ``threading.Thread`` started afterwards.
* ``Tensor.npu()``, ``Module.npu()``, storages' and ``PackedSequence.npu()`` are no-op moves;
  ``is_npu`` is True for CPU tensors (every NPU tensor lives there).
* ``torch.load(map_location='npu...')`` and checkpoints saved on a real NPU load onto the CPU;
  ``torch.Generator(device='npu')`` makes a CPU generator.
"""

from __future__ import annotations

import functools
import threading

import torch
from torch.overrides import TorchFunctionMode

from torch_npu import _runtime

CPU = torch.device("cpu")
# torch.serialization keeps (priority, tagger, deserializer) sorted; before the CPU's own (10).
LOAD_PRIORITY = 9


def on_cpu(value, ints: bool = False):
    """The CPU for an NPU device value (checked against the emulated device count); others as given."""
    if _runtime.is_npu_device(value) or (ints and isinstance(value, int) and not isinstance(value, bool)):
        _runtime.check_index(_runtime.index_of(value))
        return CPU
    return value


class NpuOnCpu(TorchFunctionMode):
    """Rewrites NPU devices in the arguments of torch functions to the CPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.device:  # torch.device('npu') itself stays an NPU device
            return func(*args, **(kwargs or {}))
        if kwargs and "device" in kwargs:
            kwargs = dict(kwargs, device=on_cpu(kwargs["device"], ints=True))
        if kwargs and kwargs.get("pin_memory"):
            kwargs = dict(kwargs, pin_memory=False)  # no pinned host memory without an NPU runtime
        if any(isinstance(a, (str, torch.device)) for a in args):
            args = tuple(on_cpu(a) for a in args)
        if func is torch.Tensor.to and len(args) > 1 and isinstance(args[1], int):
            args = (args[0], on_cpu(args[1], ints=True), *args[2:])  # x.to(0): an index
        return func(*args, **(kwargs or {}))


def enter_mode_in_this_thread() -> None:
    NpuOnCpu().__enter__()  # left entered for the life of the thread


def _enter_mode_in_new_threads() -> None:
    original_start = threading.Thread.start

    @functools.wraps(original_start)
    def start(self):
        run = self.run

        @functools.wraps(run)
        def run_with_npu_devices(*args, **kwargs):
            enter_mode_in_this_thread()
            return run(*args, **kwargs)

        self.run = run_with_npu_devices
        return original_start(self)

    threading.Thread.start = start


# -- tensors, modules, storages ------------------------------------------------------------------


def _check_device_argument(device) -> None:
    if device is not None:
        _runtime.check_index(_runtime.index_of(device))


def tensor_npu(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
    """Tensor.npu(): the tensor is already where NPU tensors live (the CPU)."""
    _check_device_argument(device)
    if memory_format is not torch.preserve_format:
        return self.contiguous(memory_format=memory_format)
    return self


def module_npu(self, device=None):
    _check_device_argument(device)
    return self


def same_object_npu(self, device=None, non_blocking=False):
    _check_device_argument(device)
    return self


def tensor_pin_memory(self, device=None):
    """No pinned host memory without an NPU runtime; the DataLoader's pin thread calls this too."""
    return self


def tensor_is_pinned(self, device=None):
    return False


def tensor_record_stream(self, stream):
    """Streams are bookkeeping: nothing to record."""


def _storage_to(original):
    """storage.to(device=...): to an NPU the storage stays where NPU storages live (the CPU)."""

    @functools.wraps(original)
    def to(self, *, device, non_blocking=False):
        if _runtime.is_npu_device(device):
            _runtime.check_index(_runtime.index_of(device))
            return self
        return original(self, device=device, non_blocking=non_blocking)

    return to


def _is_on_emulated_npu(self) -> bool:
    return self.device.type == "cpu"


def _add_methods() -> None:
    torch.Tensor.npu = tensor_npu
    torch.Tensor.is_npu = property(_is_on_emulated_npu)
    torch.Tensor.pin_memory = tensor_pin_memory
    torch.Tensor.is_pinned = tensor_is_pinned
    torch.Tensor.record_stream = tensor_record_stream
    torch.nn.Module.npu = module_npu
    torch.nn.utils.rnn.PackedSequence.npu = same_object_npu
    torch.nn.utils.rnn.PackedSequence.is_npu = property(lambda self: _is_on_emulated_npu(self.data))
    for storage in (torch.UntypedStorage, torch.TypedStorage):
        storage.to = _storage_to(storage.to)
        storage.npu = same_object_npu
        storage.is_npu = property(lambda self: self.device.type == "cpu")


# -- torch.load, torch.Generator -----------------------------------------------------------------


def _never_tag(storage):
    return None  # saving: storages are CPU storages and get the CPU's tag


def _load_npu_location_on_cpu(storage, location: str):
    if _runtime.is_npu_device(location):
        return storage
    return None


class _GeneratorType(type(torch._C.Generator)):
    """isinstance(g, torch.Generator) stays true for every generator, not only the stand-in's."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, torch._C.Generator)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, torch._C.Generator)


class Generator(torch._C.Generator, metaclass=_GeneratorType):
    """torch.Generator that accepts an NPU device and makes a CPU generator."""

    def __new__(cls, device="cpu"):
        return super().__new__(cls, device=on_cpu(device, ints=True))


# -- registration --------------------------------------------------------------------------------


def _register_backend_hooks() -> None:
    """torch.accelerator (the DataLoader's pin thread), dist.barrier() and others ask PyTorch's C++
    side about the accelerator: a no-op guard (index 0, nothing to switch) and hooks that say it
    is there answer for the Python backend."""
    acc = getattr(torch._C, "_acc", None)
    if acc is None or not hasattr(acc, "register_python_privateuseone_device_guard"):
        return

    class NoOpNpuGuard(acc.DeviceGuard):
        def type_(self):
            return torch._C._autograd.DeviceType.PrivateUse1

    class NpuHooks(acc.PrivateUse1Hooks):
        def is_available(self) -> bool:
            return _runtime.device_count() > 0

        def has_primary_context(self, device_index) -> bool:
            return True

        def is_built(self) -> bool:
            return True

    acc.register_python_privateuseone_device_guard(NoOpNpuGuard())
    acc.register_python_privateuseone_hook(NpuHooks())


def _accelerator_synchronize_on_the_npu() -> None:
    """torch.accelerator.synchronize() asks the C++ guard, which a Python backend cannot give;
    NPU work is complete when queued, so there is nothing to wait for."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None or not hasattr(accelerator, "synchronize"):
        return
    original = accelerator.synchronize

    @functools.wraps(original)
    def synchronize(device=None):
        if accelerator.current_accelerator().type != _runtime.DEVICE_TYPE:
            return original(device)
        if device is not None:
            _runtime.check_index(_runtime.index_of(device))
        return None

    accelerator.synchronize = synchronize


def install(npu_module) -> None:
    if torch._C._get_privateuse1_backend_name() != _runtime.DEVICE_TYPE:
        torch.utils.rename_privateuse1_backend(_runtime.DEVICE_TYPE)
    if getattr(torch, _runtime.DEVICE_TYPE, None) is not npu_module:
        torch._register_device_module(_runtime.DEVICE_TYPE, npu_module)
    _register_backend_hooks()
    _accelerator_synchronize_on_the_npu()
    _add_methods()
    torch.serialization.register_package(LOAD_PRIORITY, _never_tag, _load_npu_location_on_cpu)
    torch.Generator = Generator
    _enter_mode_in_new_threads()
    enter_mode_in_this_thread()
