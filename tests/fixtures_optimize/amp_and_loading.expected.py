"""amp.initialize gains combine_grad=True and DataLoader drop_last=True, unless the call passes
them already (by keyword or by position) or passes what excludes them."""
import torch
import torch_npu
from apex import amp
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2).npu()
opt = torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.1)
model, opt = amp.initialize(model, opt, opt_level="O2", loss_scale=128.0, combine_grad=True)
model, opt = amp.initialize(model, opt, opt_level="O2", combine_grad=False)
data = torch.utils.data.TensorDataset(torch.randn(10, 4))
train = DataLoader(data, batch_size=4, shuffle=True, drop_last=True)
rows = DataLoader(
    data,
    batch_size=4,
    shuffle=True,
    drop_last=True,
)
evaluation = DataLoader(data, batch_size=4, num_workers=2)
items = DataLoader(data, batch_size=None, shuffle=True)
short = DataLoader(data, 4, False, None, None, 0, None, False, False)
batches = DataLoader(data, batch_sampler=torch.utils.data.BatchSampler(range(10), 4, False))
kept = DataLoader(data, **{"batch_size": 4})
