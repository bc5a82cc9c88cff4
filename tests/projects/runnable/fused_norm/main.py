"""A pre-norm MLP block that takes apex's fused CUDA layer norm when CUDA is there (the pattern of
fairseq's and Megatron's LayerNorm helpers), trained on generated data.

    python main.py --steps 12
"""
import argparse

import torch
import torch.nn as nn


def make_norm(size):
    if torch.cuda.is_available():
        # apex's kernels run only on CUDA: on any other machine the torch layer norm is used.
        from apex.normalization import FusedLayerNorm
        return FusedLayerNorm(size)
    return nn.LayerNorm(size)


class Block(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.norm = make_norm(size)
        self.fc1 = nn.Linear(size, 4 * size)
        self.fc2 = nn.Linear(4 * size, size)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=12)
    parser.add_argument('--size', type=int, default=32)
    args = parser.parse_args()

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    torch.manual_seed(0)
    model = nn.Sequential(Block(args.size), Block(args.size), nn.Linear(args.size, 1)).to(device)
    print('device {} norm {}'.format(device.type, type(model[0].norm).__name__))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(args.steps, 16, args.size).to(device)
    targets = inputs.sum(dim=2, keepdim=True).sin()
    for step in range(args.steps):
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print('step {} loss {!r}'.format(step, loss.item()))


if __name__ == '__main__':
    main()
