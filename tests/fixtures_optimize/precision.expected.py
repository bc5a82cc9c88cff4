"""The TF32 switches (ignored on an NPU) become the NPU's HF32 switches, set and read, however
torch.backends is spelled; cudnn's other switches stay."""
import torch
import torch_npu
import torch.backends.cudnn as cudnn
from torch.backends import cuda

torch.npu.matmul.allow_hf32 = True
torch.npu.conv.allow_hf32 = False
torch_npu.npu.matmul.allow_hf32 = args.tf32
torch_npu.npu.conv.allow_hf32 = args.tf32
cudnn.benchmark = True
print("tf32", torch.npu.matmul.allow_hf32, torch_npu.npu.conv.allow_hf32)
