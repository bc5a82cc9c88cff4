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
