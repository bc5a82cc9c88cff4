"""``torch_npu.profiler`` of the gpu2npu stand-in: a thin layer over ``torch.profiler`` that profiles
the CPU. ``ProfilerActivity.NPU`` is accepted and records nothing of its own (the NPU's work is
CPU work here); ``experimental_config`` and the NPU-only settings are accepted and ignored;
``tensorboard_trace_handler`` writes torch's Chrome trace, not torch_npu's directory layout."""

from __future__ import annotations

import torch
import torch.profiler

ProfilerActivity = torch.profiler.ProfilerActivity  # CPU, and NPU once torch_npu is imported
ProfilerAction = torch.profiler.ProfilerAction
schedule = torch.profiler.schedule
record_function = torch.profiler.record_function


class ExportType:
    Text = "text"
    Db = "db"


class ProfilerLevel:
    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"
    MemoryAccess = "MemoryAccess"


class _ExperimentalConfig:
    """NPU profiling settings: kept for inspection, they change nothing on the CPU. Only the
    documented keywords are taken, so a migrated configuration torch_npu would refuse fails here."""

    def __init__(
        self,
        profiler_level=ProfilerLevel.Level0,
        aic_metrics=AiCMetrics.AiCoreNone,
        l2_cache=False,
        op_attr=False,
        data_simplification=True,
        record_op_args=False,
        export_type=ExportType.Text,
        msprof_tx=False,
        mstx=False,
        gc_detect_threshold=None,
        host_sys=(),
        sys_io=False,
        sys_interconnection=False,
    ):
        self.settings = dict(profiler_level=profiler_level, aic_metrics=aic_metrics, export_type=export_type)


def supported_activities():
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


def tensorboard_trace_handler(dir_name=None, worker_name=None, analyse_flag=True, async_mode=False):
    return torch.profiler.tensorboard_trace_handler(dir_name or "./", worker_name)


def analyse(profiler_path=None, max_process_number=None, **kwargs) -> None:
    """Offline parsing of NPU profiling data: nothing to parse."""


class profile(torch.profiler.profile):
    """torch_npu.profiler.profile: the same arguments; whatever the activities, profiles the CPU."""

    def __init__(
        self,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
        experimental_config=None,
        **kwargs,
    ):
        super().__init__(
            activities=[ProfilerActivity.CPU],  # the NPU's work is CPU work here
            schedule=schedule,
            on_trace_ready=on_trace_ready,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
            with_flops=with_flops,
            with_modules=with_modules,
        )
        self.npu_experimental_config = experimental_config  # torch's own attribute is torch's config

    # torch_npu's profile writes its data for the Ascend tools: none of kineto's in-process tables
    @property
    def key_averages(self):
        raise AttributeError("'profile' object has no attribute 'key_averages'")

    @property
    def events(self):
        raise AttributeError("'profile' object has no attribute 'events'")


__all__ = [
    "AiCMetrics",
    "ExportType",
    "ProfilerAction",
    "ProfilerActivity",
    "ProfilerLevel",
    "_ExperimentalConfig",
    "analyse",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]
