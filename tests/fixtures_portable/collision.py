import torch

DEVICE_TYPE = "the project's own name"
x = torch.zeros(2).to("cuda")
