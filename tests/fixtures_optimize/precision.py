"""The TF32 switches (ignored on an NPU) become the NPU's HF32 switches, set and read, however
torch.backends is spelled; cudnn's other switches stay."""
import torch
import torch.backends.cudnn as cudnn
from torch.backends import cuda

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = False
cuda.matmul.allow_tf32 = args.tf32
cudnn.allow_tf32 = args.tf32
cudnn.benchmark = True
print("tf32", torch.backends.cuda.matmul.allow_tf32, cudnn.allow_tf32)
