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
