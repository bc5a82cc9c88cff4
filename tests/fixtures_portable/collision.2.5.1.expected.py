import torch
ACCELERATOR = next((t for t in ('cuda', 'npu') if getattr(torch, t, None) and getattr(torch, t).is_available()), None)
DEVICE_TYPE_ = ACCELERATOR or 'cpu'

DEVICE_TYPE = "the project's own name"
x = torch.zeros(2).to(DEVICE_TYPE_)
