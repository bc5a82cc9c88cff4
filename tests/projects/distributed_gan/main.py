"""A single-card training of two models, each with its own optimizer (a GAN's shape: netD learns to
tell real samples from netG's, netG to fool it), the proof of `migrate ... distributed -t netG,netD`:
run as two processes with half the batch each, the migrated copy must end each epoch with the
evaluation losses of this script.

    python main.py --epochs 2 --batch-size 16 --checkpoint gan.pt
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, 0.0, 0.3)
        nn.init.zeros_(module.bias)


def target(batch, value, device):
    return torch.full((len(batch), 1), value, device=device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=1)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--checkpoint', default='gan.pt')
    args = parser.parse_args()

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 8)).to(device)
    netG.apply(init_weights)
    netD = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    netD.apply(init_weights)
    optimizerG = torch.optim.SGD(netG.parameters(), lr=0.05)
    optimizerD = torch.optim.SGD(netD.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(1)
    samples = TensorDataset(torch.randn(128, 8, generator=generator) + 1.0, torch.randn(128, 4, generator=generator))
    train_loader = DataLoader(samples, batch_size=args.batch_size)
    fixed_noise = torch.randn(64, 4, generator=generator).to(device)
    print('device', device.type)
    for epoch in range(args.epochs):
        for real, noise in train_loader:
            real, noise = real.to(device), noise.to(device)
            optimizerD.zero_grad()
            nn.functional.mse_loss(netD(real), target(real, 1.0, device)).backward()
            fake = netG(noise)
            nn.functional.mse_loss(netD(fake.detach()), target(real, 0.0, device)).backward()
            optimizerD.step()
            optimizerG.zero_grad()
            nn.functional.mse_loss(netD(fake), target(real, 1.0, device)).backward()
            optimizerG.step()
        with torch.no_grad():
            fooled = nn.functional.mse_loss(netD(netG(fixed_noise)), target(fixed_noise, 1.0, device)).item()
        print('epoch {} eval loss {!r}'.format(epoch, fooled))
    torch.save({'G': netG.state_dict(), 'D': netD.state_dict()}, args.checkpoint)


if __name__ == '__main__':
    main()
