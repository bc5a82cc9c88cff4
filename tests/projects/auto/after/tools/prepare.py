# Prepares the data: a script whose work runs at the top level.
import torch_npu
from torch_npu.contrib import transfer_to_npu
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--out", default="data.pt")
args = parser.parse_args()
torch.save(torch.randn(8, 4, device="cuda"), args.out)
