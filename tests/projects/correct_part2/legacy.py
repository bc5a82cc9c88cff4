import torch
from torch._six import inf, string_classes
from torch._six import PY3


def norm(grads, norm_type):
    if norm_type == inf and PY3:
        return max(g.abs().max() for g in grads)
    return torch.solve(grads[0], grads[1])


def is_name(x):
    return isinstance(x, string_classes)
