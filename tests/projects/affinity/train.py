import torch
import pkg.layers as L
from pkg import DropPath

model = torch.nn.Sequential(DropPath(0.2))
optimizer = torch.optim.AdamW(model.parameters())
x = L.channel_shuffle(torch.roll(torch.ones(4), 1), 2)
