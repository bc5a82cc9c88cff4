"""float64 tensors made on the device become float32 (behaviour); a tensor whose device is a
variable, one made on the CPU, and other dtypes keep theirs."""
import torch
from torch import float64


class SmoothedValue:
    def synchronize_between_processes(self):
        t = torch.tensor([self.count, self.total], dtype=torch.float64, device='cuda')
        return t


zeros = torch.zeros(3, dtype=torch.double, device=torch.device("cuda", 0))
ones = torch.ones(3, dtype=float64, device=f"cuda:{rank}")
steps = torch.arange(0, 10, dtype=torch.float64, device="cuda:1")
like = torch.zeros_like(zeros, dtype=torch.float64, device="cuda")
moved = ones.to("cuda", torch.float64)
moved = ones.to(device="cuda", dtype=torch.double, non_blocking=True)

on_the_cpu = torch.ones(3, dtype=torch.float64)
somewhere = torch.ones(3, dtype=torch.float64, device=device)
cast = ones.to(torch.float64)
half = torch.zeros(2, dtype=torch.float16, device="cuda")
