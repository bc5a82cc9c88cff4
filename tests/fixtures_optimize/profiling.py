"""torch.cuda.nvtx.mark -> torch_npu's mstx.mark wherever it is named; range_push and range_pop
(NVTX's stack has no one-name counterpart) stay, reported."""
import torch
from torch.cuda import nvtx
from torch.cuda.nvtx import mark

torch.cuda.nvtx.mark("start")
nvtx.mark("epoch")
mark("step")
torch.cuda.nvtx.range_push("forward")
torch.cuda.nvtx.range_pop()

# the profiler gets the NPU analysis configuration where it has none (a CUDA one is dropped
# first); one the call gives for the NPU stays
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA], record_shapes=True) as prof:
    step()
prof = torch.profiler.profile(
    schedule=torch.profiler.schedule(wait=1, warmup=1, active=2),
    experimental_config=cuda_config,
)
prof = torch.profiler.profile(experimental_config=torch_npu.profiler._ExperimentalConfig())
prof = torch.profiler.profile(**settings)
