"""A single-card regression training, the proof of `migrate ... distributed`: run as two
processes with half the batch each, the migrated copy must end each epoch with the evaluation
loss of this script.

    python main.py --epochs 1 --batch-size 16 --checkpoint model.pt
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def datasets():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=generator)
    w = torch.randn(8, 1, generator=generator)
    y = x @ w + 0.1 * torch.randn(256, 1, generator=generator)
    return TensorDataset(x[:192], y[:192]), TensorDataset(x[192:], y[192:])


def evaluate(model, loader, device):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.mse_loss(model(x.to(device)), y.to(device), reduction='sum').item()
            count += len(x)
    model.train()
    return total / count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=1)
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--checkpoint', default='model.pt')
    args = parser.parse_args()

    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train_set, val_set = datasets()
    train_loader = DataLoader(train_set, batch_size=args.batch_size)
    val_loader = DataLoader(val_set, batch_size=64)
    print('device', device.type)
    for epoch in range(args.epochs):
        for x, y in train_loader:
            loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        val_loss = evaluate(model, val_loader, device)  # every process evaluates the whole set
        print('epoch {} eval loss {!r}'.format(epoch, val_loss))
    torch.save(model.state_dict(), args.checkpoint)


if __name__ == '__main__':
    main()
