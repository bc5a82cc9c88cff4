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
ACCELERATOR = next((t for t in ('cuda', 'npu') if getattr(torch, t, None) and getattr(torch, t).is_available()), None)
DEVICE_TYPE = ACCELERATOR or 'cpu'
DEVICE_MODULE = getattr(torch, ACCELERATOR or 'cuda')
DIST_BACKEND = {'cuda': 'nccl', 'npu': 'hccl'}.get(ACCELERATOR, 'gloo')


class Pipeline:
    def cuda(self):  # the project's own cuda(): left alone
        return self


def setup(args):
    torch.manual_seed(args.seed)
    DEVICE_MODULE.manual_seed_all(args.seed)
    device = torch.device(DEVICE_TYPE if DEVICE_MODULE.is_available() else "cpu")
    if args.distributed:
        DEVICE_MODULE.set_device(args.local_rank)
        dist.init_process_group(backend=DIST_BACKEND)
        device = torch.device(f"{DEVICE_TYPE}:{args.local_rank}")
    print(DEVICE_MODULE.device_count(), DEVICE_MODULE.current_device(), os.getpid())
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
    stream = DEVICE_MODULE.Stream()
    with DEVICE_MODULE.stream(stream):
        start, end = DEVICE_MODULE.Event(enable_timing=True), DEVICE_MODULE.Event(enable_timing=True)
    DEVICE_MODULE.synchronize()
    print(DEVICE_MODULE.max_memory_allocated() / 2**20, DEVICE_MODULE.memory_reserved())
    DEVICE_MODULE.empty_cache()
    state = torch.load("ckpt.pt", map_location=lambda storage, loc: storage.to(device=torch.device(DEVICE_TYPE, args.gpu)))
    Pipeline().cuda()
    return model, scaler, state, device, start, end


if __name__ == "__main__":
    main(None)
