"""Data-parallel training with DistributedDataParallel on 2 processes started by
torch.multiprocessing.spawn (after pytorch/examples distributed/ddp), on generated data.

    python main.py --world-size 2 --port 29500
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup(rank, world_size, port):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = str(port)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    return backend


def cleanup():
    dist.barrier()  # every rank done with its collectives before any tears the group down
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(32, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def generated_dataset(size):
    generator = torch.Generator().manual_seed(1234)
    inputs = torch.randn(size, 10, generator=generator)
    weights = torch.randn(10, 5, generator=generator)
    return TensorDataset(inputs, inputs @ weights + 0.1 * torch.randn(size, 5, generator=generator))


def demo_basic(rank, world_size, port, epochs):
    backend = setup(rank, world_size, port)
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(rank)
        device = torch.device('cuda:{}'.format(rank))
    else:
        device = torch.device('cpu')
    if rank == 0:
        print('backend {} device type {} world size {}'.format(backend, device.type, dist.get_world_size()))

    torch.manual_seed(0)
    model = ToyModel().to(device)
    if use_cuda:
        ddp_model = DDP(model, device_ids=[rank])
    else:
        ddp_model = DDP(model)

    dataset = generated_dataset(128)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=7)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.01, momentum=0.9)

    step = 0
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for inputs, labels in loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = loss_fn(ddp_model(inputs), labels)
            loss.backward()
            optimizer.step()
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)
            mean_loss /= world_size
            if rank == 0:
                print('epoch {} step {} loss {!r}'.format(epoch, step, mean_loss.item()))
            step += 1

    checksum = torch.stack([p.detach().sum() for p in ddp_model.parameters()]).sum()
    gathered = [torch.zeros_like(checksum) for _ in range(world_size)]
    dist.all_gather(gathered, checksum)
    if rank == 0:
        print('replicas agree {} checksum {!r}'.format(
            all(bool(t == gathered[0]) for t in gathered), gathered[0].item()))
    cleanup()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--world-size', type=int, default=2)
    parser.add_argument('--port', type=int, default=29500)
    parser.add_argument('--epochs', type=int, default=2)
    args = parser.parse_args()
    mp.spawn(demo_basic, args=(args.world_size, args.port, args.epochs), nprocs=args.world_size, join=True)


if __name__ == '__main__':
    main()
