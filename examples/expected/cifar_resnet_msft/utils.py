"""Small helpers shared by the training script."""

import os
import random
import shutil

import numpy as np
import torch as t
import torch_npu
from torch_npu import npu as cuda


def set_seed(seed):
    """Seed every RNG we touch so runs are reproducible (up to cuDNN)."""
    random.seed(seed)
    np.random.seed(seed)
    t.manual_seed(seed)
    cuda.manual_seed_all(seed)


def get_device(local_rank):
    """Device this process should use; falls back to CPU without a GPU."""
    if t.npu.is_available():
        return t.device('npu', local_rank)
    return t.device('cpu')


class AverageMeter:
    """Tracks the latest value and running average of a scalar."""

    def __init__(self, name, fmt=':.4f'):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0.0
        self.sum = 0.0
        self.count = 0
        self.avg = 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / max(self.count, 1)

    def __str__(self):
        fmtstr = '{name} {val' + self.fmt + '} ({avg' + self.fmt + '})'
        return fmtstr.format(**self.__dict__)


def accuracy(output, target, topk=(1,)):
    """Top-k accuracy in percent for each k in ``topk``."""
    with t.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0)
            res.append(correct_k.mul_(100.0 / batch_size).item())
        return res


def log_memory(prefix=''):
    """Print peak allocated and currently reserved GPU memory in MB."""
    if not t.npu.is_available():
        return
    peak = t.npu.max_memory_allocated() / 1024 ** 2
    reserved = cuda.memory_reserved() / 1024 ** 2
    print(f"{prefix}cuda memory: {peak:.1f} MB peak allocated, "
          f"{reserved:.1f} MB reserved")


def save_checkpoint(state, is_best, out_dir, filename='checkpoint.pth'):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, filename)
    t.save(state, path)
    if is_best:
        shutil.copyfile(path, os.path.join(out_dir, 'model_best.pth'))
    return path


def load_checkpoint(path, gpu=None):
    """Load a checkpoint onto the right device.

    Checkpoints are written from rank 0, so their tensors are tagged with
    device 0; remap them to this process's GPU when one is given.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint found at '{path}'")
    if gpu is None:
        checkpoint = t.load(path, map_location='npu:0')
    else:
        checkpoint = t.load(path, map_location=f'npu:{gpu}')
    return checkpoint


def strip_ddp_prefix(state_dict):
    """Drop the ``module.`` prefix DDP adds so weights load into a bare model."""
    return {k[len('module.'):] if k.startswith('module.') else k: v
            for k, v in state_dict.items()}
