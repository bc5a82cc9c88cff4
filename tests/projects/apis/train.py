import torch as t
from torch import nn
import flash_attn
import my_ext


class Net(nn.Module):
    def forward(self, x):
        return my_ext.fused_add(x, x).double()


def main():
    model = nn.DataParallel(Net()).module  # reads the wrapper: kept
    t.cuda.get_arch_list()
    program = t.export.export(model, (t.zeros(2),))
    ids = t.quantile(t.ones(2), 0.5)
    y = model.fused_add(ids)  # not the extension: a method of some object
    return program, y, t.zeros(2, dtype=t.float64)


@t.jit.script
def scale(x):
    return x * 2
