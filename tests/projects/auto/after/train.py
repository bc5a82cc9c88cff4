#!/usr/bin/env python
"""Train a small model on one device or several (automatic-migration fixture)."""
from __future__ import annotations
import torch_npu
from torch_npu.contrib import transfer_to_npu

import argparse

import torch
import torch.distributed as dist

from lib.helpers import seed_all
from model import Net


@torch.jit.script
def scaled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def setup(backend: str) -> None:
    assert backend in ["gloo", "nccl"], backend  # the patcher makes the group hccl
    dist.init_process_group(backend)  # patched at run time: stays
    if dist.get_backend() == "hccl":
        print("collectives on the accelerator")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="nccl")
    args = parser.parse_args()
    seed_all(0)
    state = torch.npu.default_generators[0].get_state()
    model = Net().cuda().to(memory_format=torch.channels_last)
    print(model(torch.ones(1, 4).cuda()), state.shape, args.backend)


if __name__ == "__main__":
    main()
