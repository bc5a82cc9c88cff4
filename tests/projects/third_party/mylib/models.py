import torch.nn as nn

from mylib.ops import fused, harmless, odd


class Head(nn.Module):
    def forward(self, x):
        return fused(harmless(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        return self.head(x).cuda()

    def describe(self):
        return odd(self)


class Runner:
    def predict(self, x):
        return Net()(x)


def make_runner():
    return Runner()
