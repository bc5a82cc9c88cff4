import torch
ACCELERATOR = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else None
DEVICE_TYPE_ = ACCELERATOR or 'cpu'

DEVICE_TYPE = "the project's own name"
x = torch.zeros(2).to(DEVICE_TYPE_)
