"""float64 tensors made on the device become float32 (behaviour); a tensor whose device is a
variable, one made on the CPU, and other dtypes keep theirs."""
import torch
import torch_npu
from torch import float64


class SmoothedValue:
    def synchronize_between_processes(self):
        t = torch.tensor([self.count, self.total], dtype=torch.float32, device='npu')
        return t


zeros = torch.zeros(3, dtype=torch.float32, device=torch.device("npu", 0))
ones = torch.ones(3, dtype=torch.float32, device=f"npu:{rank}")
steps = torch.arange(0, 10, dtype=torch.float32, device="npu:1")
like = torch.zeros_like(zeros, dtype=torch.float32, device="npu")
moved = ones.to("npu", torch.float32)
moved = ones.to(device="npu", dtype=torch.float32, non_blocking=True)

on_the_cpu = torch.ones(3, dtype=torch.float64)
somewhere = torch.ones(3, dtype=torch.float64, device=f'npu:{device}' if isinstance(device, int) else device)
cast = ones.to(torch.float64)
half = torch.zeros(2, dtype=torch.float16, device="npu")
