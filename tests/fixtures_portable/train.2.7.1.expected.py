"""A CUDA training script with most of what --target portable rewrites."""
import os

import torch
import torch.distributed as dist
from torch.amp import GradScaler
from torch import autocast

try:
    from apex.normalization import FusedLayerNorm
except ImportError:
    FusedLayerNorm = None
ACCELERATOR = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else None
DEVICE_TYPE = ACCELERATOR or 'cpu'
DEVICE_MODULE = torch.get_device_module(ACCELERATOR or 'cuda')
DIST_BACKEND = torch.distributed.get_default_backend_for_device(DEVICE_TYPE)


class Pipeline:
    def cuda(self):  # the project's own cuda(): left alone
        return self


def setup(args):
    torch.manual_seed(args.seed)
    DEVICE_MODULE.manual_seed_all(args.seed)
    device = torch.device(DEVICE_TYPE if torch.accelerator.is_available() else "cpu")
    if args.distributed:
        torch.accelerator.set_device_index(args.local_rank)
        dist.init_process_group(backend=DIST_BACKEND)
        device = torch.device(f"{DEVICE_TYPE}:{args.local_rank}")
    print(torch.accelerator.device_count(), torch.accelerator.current_device_index(), os.getpid())
    return device


def step(model, x, y, scaler, args):
    x = x.to(DEVICE_TYPE, non_blocking=True)
    y = y.to(torch.device(DEVICE_TYPE, args.gpu))
    if x.device.type == ACCELERATOR:  # compared: is it the accelerator?
        with autocast(DEVICE_TYPE, enabled=args.amp):
            loss = model(x).sub(y).pow(2).mean()
    else:
        loss = model(x).sub(y).pow(2).mean()
    scaler.scale(loss).backward()
    return loss


def main(args):
    device = setup(args)
    model = torch.nn.Linear(4, 4).to(DEVICE_TYPE)
    scaler = GradScaler(DEVICE_TYPE, enabled=args.amp)
    stream = torch.Stream()
    with DEVICE_MODULE.stream(stream):
        start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    torch.accelerator.synchronize()
    print(DEVICE_MODULE.max_memory_allocated() / 2**20, DEVICE_MODULE.memory_reserved())
    DEVICE_MODULE.empty_cache()
    state = torch.load("ckpt.pt", map_location=lambda storage, loc: storage.to(device=torch.device(DEVICE_TYPE, args.gpu)))
    Pipeline().cuda()
    return model, scaler, state, device, start, end


if __name__ == "__main__":
    main(None)
