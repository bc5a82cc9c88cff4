"""``torch.npu`` (also ``torch_npu.npu``) of the gpu2npu stand-in: device queries and selection,
synchronisation, memory statistics, random-number state, streams and events, amp.

Everything here is bookkeeping around the CPU: memory statistics are zero (the stand-in does not
track tensor memory), streams and events complete at once, and the NPU random state is kept apart
from torch's CPU generator, which draws the numbers of NPU tensors as it draws them for a CPU run.
A name this module does not emulate raises AttributeError saying so.
"""

from __future__ import annotations

import collections
import collections.abc
import time

import torch

from torch_npu import _runtime
from torch_npu.npu import amp, mstx  # noqa: F401  (torch.npu.amp, torch.npu.mstx)

DEVICE_NAME = "Ascend910B (gpu2npu CPU stand-in)"
TOTAL_MEMORY = 64 * 1024**3  # what get_device_properties and mem_get_info report

BFloat16Tensor = torch.BFloat16Tensor
BoolTensor = torch.BoolTensor
ByteTensor = torch.ByteTensor
CharTensor = torch.CharTensor
DoubleTensor = torch.DoubleTensor
FloatTensor = torch.FloatTensor
HalfTensor = torch.HalfTensor
IntTensor = torch.IntTensor
LongTensor = torch.LongTensor
ShortTensor = torch.ShortTensor


# -- devices ---------------------------------------------------------------------------------------


def is_available() -> bool:
    return _runtime.device_count() > 0


def device_count() -> int:
    return _runtime.device_count()


def current_device() -> int:
    return _runtime.current_device()


def set_device(device) -> None:
    index = _runtime.index_of(device)
    if index >= 0:  # torch.cuda.set_device(-1) is a no-op too
        _runtime.set_current_device(index)


def is_initialized() -> bool:
    return True


def init() -> None:
    """Nothing to start."""


def _lazy_call(callable_) -> None:
    """Runs ``callable_`` now: the stand-in's NPU is initialised from the start (torch_npu queues it
    until then)."""
    callable_()


def _lazy_init() -> None:
    """Nothing to start."""


def _is_in_bad_fork() -> bool:
    return False


def synchronize(device=None) -> None:
    """Work on the CPU is done when the call returns."""


class device:
    """Context manager that makes an NPU current and restores the previous one."""

    def __init__(self, device):
        # torch_npu's name, which set_device(device(i)) reads
        self.idx = _runtime.index_of(device, optional=True)
        self.previous = None

    def __enter__(self):
        self.previous = _runtime.current_device()
        if self.idx is not None and self.idx >= 0:
            _runtime.set_current_device(self.idx)
        return self

    def __exit__(self, *exc_info):
        _runtime.set_current_device(self.previous)
        return False


class device_of(device):
    """The device of a tensor: CPU tensors (all of them here) leave the current NPU unchanged."""

    def __init__(self, obj):
        super().__init__(None)


DeviceProperties = collections.namedtuple("DeviceProperties", "name total_memory multi_processor_count")


def get_device_name(device=None) -> str:
    _runtime.check_index(_runtime.index_of(device))
    return DEVICE_NAME


def get_device_properties(device=None):
    _runtime.check_index(_runtime.index_of(device))
    return DeviceProperties(DEVICE_NAME, TOTAL_MEMORY, 1)


def get_device_capability(device=None):
    """None, as torch_npu answers: NPUs have no CUDA compute capability."""
    return None


def is_bf16_supported(*args, **kwargs) -> bool:
    return True


def get_amp_supported_dtype():
    """What torch.autocast('npu') accepts."""
    return [torch.float16, torch.bfloat16]


def is_autocast_enabled() -> bool:
    """Whether ``torch.autocast('npu')`` is on (torch.is_autocast_enabled() asks about CUDA's)."""
    return torch.is_autocast_enabled("npu")


def get_autocast_dtype():
    """The dtype ``torch.autocast('npu')`` computes in (torch.get_autocast_gpu_dtype() is CUDA's)."""
    return torch.get_autocast_dtype("npu")


def can_device_access_peer(device, peer_device) -> bool:
    return True


def utilization(device=None) -> int:
    return 0


def set_compile_mode(jit_compile=False) -> None:
    """Operator compilation does not exist on the CPU."""


def set_option(option) -> None:
    """NPU runtime options do not exist on the CPU."""


class _Flags:
    """Settings real code flips (``torch.npu.config.allow_internal_format = False``): kept, unused."""

    def __init__(self, **defaults):
        self.__dict__.update(defaults)


config = _Flags(allow_internal_format=False)
matmul = _Flags(allow_hf32=False)
conv = _Flags(allow_hf32=True)


# -- memory statistics (not tracked: zeros) --------------------------------------------------------


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device=None) -> None:
    """Nothing is tracked."""


reset_max_memory_allocated = reset_peak_memory_stats
reset_max_memory_cached = reset_peak_memory_stats
reset_accumulated_memory_stats = reset_peak_memory_stats


def empty_cache() -> None:
    """No caching allocator to empty."""


def memory_stats(device=None) -> dict:
    stats = {}
    for name in ("allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            for kind in ("current", "peak", "allocated", "freed"):
                stats[f"{name}.{pool}.{kind}"] = 0
    stats["num_alloc_retries"] = 0
    stats["num_ooms"] = 0
    return stats


def memory_stats_as_nested_dict(device=None) -> dict:
    nested: dict = {}
    for key, value in memory_stats(device).items():
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def memory_summary(device=None, abbreviated=False) -> str:
    return f"gpu2npu stand-in: NPU memory of device {_runtime.index_of(device)} is not tracked (all zero)\n"


def memory_snapshot() -> list:
    return []


def mem_get_info(device=None):
    return TOTAL_MEMORY, TOTAL_MEMORY


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Kept by no allocator."""


def ipc_collect() -> None:
    """No inter-process memory."""


# -- random-number state (bookkeeping; NPU tensors draw from torch's CPU generator) ----------------

_generators: dict = {}


def _generator(device=None):
    index = _runtime.check_index(_runtime.index_of(device))
    if index not in _generators:
        _generators[index] = torch._C.Generator()
    return _generators[index]


class _DefaultGenerators(collections.abc.Sequence):
    """One generator per visible device, counted when first asked: real torch fills its
    ``default_generators`` at initialisation, so a visibility mask set after the import counts."""

    def __len__(self) -> int:
        return device_count()

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(len(self))[index])
        if not -len(self) <= index < len(self):
            raise IndexError("default_generators index out of range")
        return _generator(index % len(self))


default_generators = _DefaultGenerators()


def manual_seed(seed) -> None:
    _generator().manual_seed(int(seed))


def manual_seed_all(seed) -> None:
    for index in range(device_count()):
        _generator(index).manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def seed_all() -> None:
    for index in range(device_count()):
        _generator(index).seed()


def initial_seed() -> int:
    return _generator().initial_seed()


def get_rng_state(device="npu") -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(new_state, device="npu") -> None:
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state(index) for index in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


# -- streams and events (work completes at once) ---------------------------------------------------


class Event:
    """Records the host time; elapsed_time() is the time between two records, in milliseconds."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._recorded_at = None

    def record(self, stream=None) -> None:
        self._recorded_at = time.perf_counter()

    def wait(self, stream=None) -> None:
        """Nothing is pending."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Nothing is pending."""

    def elapsed_time(self, end_event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Events were not created with enable_timing=True")
        if self._recorded_at is None or end_event._recorded_at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time")
        return (end_event._recorded_at - self._recorded_at) * 1000.0


class Stream:
    """A stream whose work is done when it is queued."""

    _next_id = 1

    def __init__(self, device=None, priority=0, **kwargs):
        self.device_index = _runtime.check_index(_runtime.index_of(device))
        self.priority = priority
        self.stream_id = Stream._next_id
        Stream._next_id += 1

    @property
    def device(self) -> torch.device:
        return torch.device(_runtime.DEVICE_TYPE, self.device_index)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Nothing is pending."""

    def wait_event(self, event) -> None:
        """Nothing is pending."""

    def wait_stream(self, stream) -> None:
        """Nothing is pending."""

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __enter__(self):
        self._context = StreamContext(self)
        return self._context.__enter__()

    def __exit__(self, *exc_info):
        return self._context.__exit__(*exc_info)

    def __repr__(self) -> str:
        return f"<torch.npu.Stream device=npu:{self.device_index} stream_id={self.stream_id}>"


_default_streams: dict = {}
_current_streams: dict = {}


def default_stream(device=None) -> Stream:
    index = _runtime.check_index(_runtime.index_of(device))
    if index not in _default_streams:
        _default_streams[index] = Stream(index)
    return _default_streams[index]


def current_stream(device=None) -> Stream:
    index = _runtime.check_index(_runtime.index_of(device))
    return _current_streams.get(index) or default_stream(index)


def set_stream(stream) -> None:
    if stream is not None:
        _current_streams[stream.device_index] = stream


class StreamContext:
    """Makes a stream current for a block (``with torch.npu.stream(s):``)."""

    def __init__(self, stream):
        self.stream = stream
        self.previous = None

    def __enter__(self):
        if self.stream is not None:
            self.previous = current_stream(self.stream.device_index)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc_info):
        if self.stream is not None:
            set_stream(self.previous)
        return False


def stream(stream) -> StreamContext:
    return StreamContext(stream)


def is_current_stream_capturing() -> bool:
    return False


def get_sync_debug_mode() -> int:
    return 0


def set_sync_debug_mode(debug_mode) -> None:
    """No asynchronous work to warn about."""


def __getattr__(name: str):
    raise AttributeError(
        f"torch.npu.{name} is not emulated by the gpu2npu stand-in for torch_npu "
        "(see the gpu2npu.standin documentation for what is)"
    )
