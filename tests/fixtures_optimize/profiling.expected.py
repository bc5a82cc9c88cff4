"""torch.cuda.nvtx.mark -> torch_npu's mstx.mark wherever it is named; range_push and range_pop
(NVTX's stack has no one-name counterpart) stay, reported."""
import torch
import torch_npu
from torch.cuda import nvtx
from torch_npu.npu.mstx import mark

torch.npu.mstx.mark("start")
torch_npu.npu.mstx.mark("epoch")
mark("step")
torch.cuda.nvtx.range_push("forward")
torch.cuda.nvtx.range_pop()

# the profiler gets the NPU analysis configuration where it has none (a CUDA one is dropped
# first); one the call gives for the NPU stays
with torch_npu.profiler.profile(activities=[torch_npu.profiler.ProfilerActivity.NPU], record_shapes=True, experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler.ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization)) as prof:
    step()
prof = torch_npu.profiler.profile(
    schedule=torch_npu.profiler.schedule(wait=1, warmup=1, active=2),
    experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler.ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization),
)
prof = torch_npu.profiler.profile(experimental_config=torch_npu.profiler._ExperimentalConfig())
prof = torch_npu.profiler.profile(**settings)
