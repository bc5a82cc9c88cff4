"""Fine-tunes a small regression model from the metadata a CUDA training run exported, on
generated data; picks the attention kernel by compute capability as flash-attention users do.

    python main.py --steps 12
"""
import argparse
import json

import torch
import torch.nn as nn

# What the CUDA run exported: its metadata says where it ran, whatever machine reads it.
EXPORTED = '{"device_type": "cuda", "device_index": 0, "seed": 7, "hidden": 16}'


def attention_kernel():
    # flash kernels need compute capability 8.0 (Ampere) or newer
    if torch.cuda.is_available() and torch.cuda.get_device_properties(0).major >= 8:
        return 'flash'
    return 'math'


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=12)
    args = parser.parse_args()

    meta = json.loads(EXPORTED)
    if meta['device_type'] == 'cuda':
        origin = 'exported on a GPU'
    else:
        raise SystemExit('unknown export: {}'.format(meta['device_type']))
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    print('device {} kernel {} origin {}'.format(device.type, attention_kernel(), origin))

    torch.manual_seed(meta['seed'])
    hidden = meta['hidden']
    model = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    inputs = torch.randn(args.steps, 32, 8, device=device)
    targets = inputs.pow(2).mean(dim=2, keepdim=True)
    for step in range(args.steps):
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print('step {} loss {!r}'.format(step, loss.item()))


if __name__ == '__main__':
    main()
