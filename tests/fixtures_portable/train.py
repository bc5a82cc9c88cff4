"""A CUDA training script with most of what --target portable rewrites."""
import os

import torch
import torch.distributed as dist
from torch.cuda.amp import GradScaler, autocast

try:
    from apex.normalization import FusedLayerNorm
except ImportError:
    FusedLayerNorm = None


class Pipeline:
    def cuda(self):  # the project's own cuda(): left alone
        return self


def setup(args):
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.distributed:
        torch.cuda.set_device(args.local_rank)
        dist.init_process_group(backend="nccl")
        device = torch.device(f"cuda:{args.local_rank}")
    print(torch.cuda.device_count(), torch.cuda.current_device(), os.getpid())
    return device


def step(model, x, y, scaler, args):
    x = x.cuda(non_blocking=True)
    y = y.cuda(args.gpu)
    if x.device.type == "cuda":  # compared: is it the accelerator?
        with autocast(enabled=args.amp):
            loss = model(x).sub(y).pow(2).mean()
    else:
        loss = model(x).sub(y).pow(2).mean()
    scaler.scale(loss).backward()
    return loss


def main(args):
    device = setup(args)
    model = torch.nn.Linear(4, 4).cuda()
    scaler = GradScaler(enabled=args.amp)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    print(torch.cuda.max_memory_allocated() / 2**20, torch.cuda.memory_reserved())
    torch.cuda.empty_cache()
    state = torch.load("ckpt.pt", map_location=lambda storage, loc: storage.cuda(args.gpu))
    Pipeline().cuda()
    return model, scaler, state, device, start, end


if __name__ == "__main__":
    main(None)
