import torch
from torch import optim
from torch.optim import AdamW as W

model = torch.nn.Linear(4, 2).cuda()
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
sgd_positional = optim.SGD(model.parameters(), 0.1, 0.9)
adam = torch.optim.Adam(
    model.parameters(),  # the parameters
    lr=1e-3,
    betas=(0.9, 0.99),
)
adamw = W(model.parameters(), weight_decay=0.05)
adadelta = optim.Adadelta(model.parameters(), lr=1.0)
rmsprop = optim.RMSprop(model.parameters(), lr=1e-2, alpha=0.9, centered=True)
# kept: arguments the fused optimizer does not take, or an lr NpuFusedSGD has no default for
foreach = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
no_lr = torch.optim.SGD(model.parameters())
unpacked = torch.optim.AdamW(model.parameters(), **settings)
too_many = optim.Adadelta(model.parameters(), 1.0, 0.9, 1e-6, 0, None)
# kept: not calls
kind = isinstance(sgd, torch.optim.SGD)


class Mine(torch.optim.SGD):
    pass
