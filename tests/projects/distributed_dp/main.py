"""RAFT's shape (princeton-vl/RAFT train.py): the model is put in a DataParallel before it is moved,
a checkpoint it saved is restored through the wrapper, and the script reads the wrapper's .module
(model.module.freeze_bn()). Its checkpoints have the wrapper's 'module.' keys.

    python main.py --batch-size 16 --epochs 2 --checkpoint model.pt [--restore_ckpt model.pt]
"""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.fc = nn.Linear(8, 1)

    def freeze_bn(self):
        self.bn.eval()

    def forward(self, x):
        return self.fc(self.bn(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--batch-size', type=int, default=16)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--checkpoint', default='model.pt')
    parser.add_argument('--restore_ckpt', default=None)
    args = parser.parse_args()
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    print('device', device)

    torch.manual_seed(0)
    model = nn.DataParallel(Net())
    if args.restore_ckpt is not None:
        model.load_state_dict(torch.load(args.restore_ckpt))
    model.to(device)
    model.train()
    model.module.freeze_bn()  # the running statistics stay those of the start

    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    train_loader = DataLoader(data, batch_size=args.batch_size, shuffle=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in train_loader:
            loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print('epoch', epoch, 'done')
    torch.save(model.state_dict(), args.checkpoint)


if __name__ == '__main__':
    main()
