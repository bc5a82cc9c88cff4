#!/usr/bin/env python
"""Train on one card (the anchor's -s cases, B21 included)."""
from __future__ import annotations

import argparse

import torch
import torch_npu

from utils.data import batches
from utils.model import Net
import os
DEVICE_ID = int(os.environ['DEVICE_ID']) if os.environ.get('DEVICE_ID', '').isdigit() else 0
if os.environ.get('DEVICE_ID', '').isdigit():
    torch_npu.npu.set_device(DEVICE_ID)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    torch.npu.set_device(DEVICE_ID)
    model = Net().npu()
    cpu = torch.device("cpu")  # stays: B21 forced it onto the NPU
    state = torch.load("ckpt.pt", map_location=torch.device("cpu"))
    model.load_state_dict(state)
    device = torch.device("npu", DEVICE_ID)
    for x in batches():
        loss = model(x.to(device)).sum()
        loss.to(cpu)


if __name__ == "__main__":
    main()
