"""DataLoader pin_memory_device="npu" where pin_memory is on; DistributedDataParallel
broadcast_buffers=False, unless the call passes them already (by keyword or by position); a
closing parenthesis on a line of its own stays there."""
import torch
import torch_npu
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

dist.init_process_group("hccl")
rank = dist.get_rank()
model = torch.nn.Linear(4, 2).npu(rank)
ddp = DDP(model, device_ids=[rank], broadcast_buffers=False)
kept_choices = torch.nn.parallel.DistributedDataParallel(model, [rank], None, 0, True)
closing = DDP(
    model, device_ids=[rank], find_unused_parameters=True, broadcast_buffers=False  # the paren stays below
)
wrapped = DDP(
    model,
    device_ids=[rank],
    find_unused_parameters=True,
    broadcast_buffers=False,
)
data = torch.utils.data.TensorDataset(torch.randn(10, 4))
pinned = DataLoader(data, batch_size=4, pin_memory=True, drop_last=True, pin_memory_device="npu")
chosen = DataLoader(data, batch_size=4, pin_memory=torch.npu.is_available(), drop_last=True, pin_memory_device="npu")
unpinned = DataLoader(data, batch_size=4, pin_memory=False, drop_last=True)
default = DataLoader(data, batch_size=4, drop_last=True)
cuda_pinned = DataLoader(data, batch_size=4, pin_memory=True, drop_last=True, pin_memory_device="npu")
