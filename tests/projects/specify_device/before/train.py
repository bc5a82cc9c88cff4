#!/usr/bin/env python
"""Train on one card (the anchor's -s cases, B21 included)."""
from __future__ import annotations

import argparse

import torch

from utils.data import batches
from utils.model import Net


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    torch.cuda.set_device(args.gpu)
    model = Net().cuda(args.gpu)
    cpu = torch.device("cpu")  # stays: B21 forced it onto the NPU
    state = torch.load("ckpt.pt", map_location=torch.device("cpu"))
    model.load_state_dict(state)
    device = torch.device("cuda", args.gpu)
    for x in batches():
        loss = model(x.to(device)).sum()
        loss.to(cpu)


if __name__ == "__main__":
    main()
