import torch
from torch.utils.cpp_extension import load, load_inline

import my_ext

CPP = """
#include <torch/extension.h>
torch::Tensor scale_inline(torch::Tensor x, double factor) { return x * factor; }
"""

jit = load(name="jit_ext", sources=["csrc/jit_ops.cpp"], verbose=True)
inline = load_inline(name="inline_ext", cpp_sources=CPP, functions=["scale_inline"])
state = torch.load("weights.pt")


def step(a, b, model):
    c = my_ext.my_add(a, b)
    d = my_ext.scale(c)
    e = jit.double_it(d)
    f = torch.ops.myops.fused_gelu(e, approximate=True)
    return model.forward(f, b)
