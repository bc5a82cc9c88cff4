"""Train on one card (the distributed fixture: msFmkTransplt's B20 cases)."""
import argparse
import logging

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from lib.data import make_sets, fixed_batches

log = logging.getLogger(__name__)


def loaders(args):
    train_set, val_set = make_sets()
    # built in a return statement, shuffle given by position (B20)
    return DataLoader(train_set, args.batch_size, True), DataLoader(val_set, batch_size=64)


def run_epoch(loader, model, optimizer):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
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
    model = model.cuda()  # moved: wrapped after it
    model = model.float()  # another assignment: no second wrap (B20)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader, val_loader = loaders(args)
    extra_set = make_sets()[1]
    fixed = DataLoader(extra_set, batch_sampler=fixed_batches())  # its own batch_sampler: kept
    for epoch in range(args.epochs):
        loss = run_epoch(train_loader, model, optimizer)
        # a loader passed as an argument (B20)
        run_epoch(DataLoader(extra_set, batch_size=8, shuffle=True), model, optimizer)
        print(f"epoch {epoch} loss {loss:.4f}")
        log.info("epoch %d done", epoch)
    torch.save(model.state_dict(), "model.pt")
    model.load_state_dict(torch.load("model.pt"))
    return fixed


if __name__ == "__main__":
    main()
