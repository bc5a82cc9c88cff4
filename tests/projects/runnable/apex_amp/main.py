"""A pre-norm transformer block (self-attention, apex's FusedLayerNorm where apex has its kernels)
trained with apex amp the way the Ascend porting guide sets it up (amp.initialize, amp.scale_loss),
on generated data read through a DataLoader whose last batch is short.

    python main.py --samples 50 --batch 8
"""
import argparse
import math

import torch
import torch.nn as nn
from apex import amp
from torch.utils.data import DataLoader, TensorDataset

try:
    from apex.normalization import FusedLayerNorm  # apex's fused CUDA kernels
except ImportError:  # an apex without them (Ascend's; the stand-in's): torch's layer norm
    from torch.nn import LayerNorm as FusedLayerNorm


class Attention(nn.Module):
    def __init__(self, size, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(size, 3 * size)
        self.out = nn.Linear(size, size)

    def forward(self, x):
        batch, length, size = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(batch, length, size))


class Block(nn.Module):
    def __init__(self, size, heads):
        super().__init__()
        self.norm1 = FusedLayerNorm(size)
        self.attention = Attention(size, heads)
        self.norm2 = FusedLayerNorm(size, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(size, 4 * size), nn.GELU(), nn.Linear(4 * size, size))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--samples', type=int, default=50)
    parser.add_argument('--batch', type=int, default=8)
    parser.add_argument('--size', type=int, default=32)
    args = parser.parse_args()

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    torch.manual_seed(0)
    model = nn.Sequential(Block(args.size, 4), Block(args.size, 4), nn.Linear(args.size, 1)).to(device)
    print('device {} norm {}'.format(device.type, type(model[0].norm1).__name__))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, optimizer = amp.initialize(model, optimizer, opt_level='O1', loss_scale=128.0)
    inputs = torch.randn(args.samples, 6, args.size)
    data = TensorDataset(inputs, inputs.sum(dim=(1, 2)).sin().unsqueeze(1))
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(0), pin_memory=True)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = nn.functional.mse_loss(model(x).mean(dim=1), y)
        optimizer.zero_grad()
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()
        print('step {} batch {} loss {!r}'.format(step, len(x), loss.item()))


if __name__ == '__main__':
    main()
