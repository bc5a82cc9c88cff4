"""apex's FusedAdam -> NpuFusedAdamW with apex's weight decay default (0) where the call leaves it;
bias_correction=True, adam_w_mode=True and amsgrad=False dropped; every call NpuFusedAdamW cannot
make keeps FusedAdam (reported)."""
import torch
import torch_npu
import apex
from apex.optimizers import FusedAdam

default = torch_npu.optim.NpuFusedAdamW(model.parameters(), weight_decay=0)
tuned = torch_npu.optim.NpuFusedAdamW(model.parameters(), 3e-4, betas=(0.9, 0.95), eps=1e-6, weight_decay=0.1)
spelled_out = torch_npu.optim.NpuFusedAdamW(
    groups,
    lr=args.lr,
    weight_decay=0,
)

adam_mode = FusedAdam(model.parameters(), lr=1e-3, adam_w_mode=False)
no_correction = FusedAdam(model.parameters(), lr=1e-3, bias_correction=False)
chosen = FusedAdam(model.parameters(), lr=1e-3, adam_w_mode=args.adamw)
grads_kept = FusedAdam(model.parameters(), lr=1e-3, set_grad_none=False)
positional = FusedAdam(model.parameters(), 1e-3, True)
settings = FusedAdam(model.parameters(), **args.optimizer)
