"""Train on one card (the distributed fixture: msFmkTransplt's B20 cases)."""
import argparse
import logging

import torch
import torch_npu
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from lib.data import make_sets, fixed_batches
import os
LOCAL_RANK = int(os.environ.get('LOCAL_RANK', '0'))
torch_npu.npu.set_device(LOCAL_RANK)
if not torch.distributed.is_initialized():
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', '29500')
    torch.distributed.init_process_group('hccl', rank=int(os.environ.get('RANK', '0')), world_size=int(os.environ.get('WORLD_SIZE', '1')))

log = logging.getLogger(__name__)


def loaders(args):
    train_set, val_set = make_sets()
    # built in a return statement, shuffle given by position (B20)
    return DataLoader(train_set, args.batch_size, sampler=torch.utils.data.distributed.DistributedSampler(train_set, shuffle=True)), DataLoader(val_set, batch_size=64)


def run_epoch(loader, model, optimizer):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x.npu()), y.npu())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    if args.resume:
        model.load_state_dict(torch.load(args.resume, map_location="cpu"))
    model = model.npu()  # moved: wrapped after it
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[LOCAL_RANK])
    model = model.float()  # another assignment: no second wrap (B20)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader, val_loader = loaders(args)
    extra_set = make_sets()[1]
    fixed = DataLoader(extra_set, batch_sampler=fixed_batches())  # its own batch_sampler: kept
    for epoch in range(args.epochs):
        if isinstance(getattr(train_loader, 'sampler', None), torch.utils.data.distributed.DistributedSampler):
            train_loader.sampler.set_epoch(epoch)
        loss = run_epoch(train_loader, model, optimizer)
        # a loader passed as an argument (B20)
        run_epoch(DataLoader(extra_set, batch_size=8, sampler=torch.utils.data.distributed.DistributedSampler(extra_set, shuffle=True)), model, optimizer)
        if torch.distributed.get_rank() == 0:
            print(f"epoch {epoch} loss {loss:.4f}")
            log.info("epoch %d done", epoch)
    if torch.distributed.get_rank() == 0:
        torch.save(model.module.state_dict(), "model.pt")
    torch.distributed.barrier()
    model.module.load_state_dict(torch.load("model.pt"))
    return fixed


if __name__ == "__main__":
    main()
