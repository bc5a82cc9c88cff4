import torch

from mylib import _ext


def parallel(model):
    return torch.autograd.profiler.emit_nvtx(model)


def fused(x):
    return _ext.fused_add(x, x)


def odd(x):
    return torch.adjoint(x)


def harmless(x):
    return torch.zeros_like(x)
