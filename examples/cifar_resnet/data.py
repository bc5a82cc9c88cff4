"""CIFAR-10 input pipeline."""

import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

# Per-channel statistics of the CIFAR-10 training set.
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)


def build_transforms(train):
    # torchvision only for the real data, so a --synthetic smoke run needs no torchvision.
    import torchvision.transforms as transforms

    if train:
        return transforms.Compose([
            transforms.RandomCrop(32, padding=4),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(CIFAR10_MEAN, CIFAR10_STD),
        ])
    return transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize(CIFAR10_MEAN, CIFAR10_STD),
    ])


def cifar10(root, download):
    import torchvision

    train_set = torchvision.datasets.CIFAR10(
        root=root, train=True, download=download,
        transform=build_transforms(train=True))
    test_set = torchvision.datasets.CIFAR10(
        root=root, train=False, download=download,
        transform=build_transforms(train=False))
    return train_set, test_set


def synthetic_cifar10(train_size=64, test_size=32, seed=0):
    """Random CIFAR-shaped images and labels, the same on every run and machine."""
    generator = torch.Generator().manual_seed(seed)

    def split(size):
        images = torch.randn(size, 3, 32, 32, generator=generator)
        labels = torch.randint(0, 10, (size,), generator=generator)
        return TensorDataset(images, labels)

    return split(train_size), split(test_size)


def get_dataloaders(root, batch_size, num_workers=4, distributed=False,
                    download=True, synthetic=False):
    """Build the CIFAR-10 train and test loaders.

    ``batch_size`` is per process.  When ``distributed`` is true each rank
    gets a ``DistributedSampler`` shard of the data and the caller must call
    ``train_sampler.set_epoch(epoch)`` at the start of every epoch so the
    shuffle differs between epochs.

    Batches are collated into pinned (page-locked) host memory so host-to-cuda
    copies are fast and can overlap with compute when the training loop uses
    ``non_blocking=True``.

    ``synthetic`` replaces CIFAR-10 with random data of its shape (no
    download, no torchvision): a smoke test of the training loop.

    Returns:
        (train_loader, test_loader, train_sampler); the sampler is ``None``
        in the non-distributed case.
    """
    if synthetic:
        train_set, test_set = synthetic_cifar10()
    else:
        train_set, test_set = cifar10(root, download)

    if distributed:
        train_sampler = DistributedSampler(train_set, shuffle=True)
        test_sampler = DistributedSampler(test_set, shuffle=False)
    else:
        train_sampler = None
        test_sampler = None

    train_loader = DataLoader(
        train_set,
        batch_size=batch_size,
        shuffle=(train_sampler is None),
        sampler=train_sampler,
        num_workers=num_workers,
        pin_memory=True,
        drop_last=True,
        persistent_workers=num_workers > 0,
    )
    test_loader = DataLoader(
        test_set,
        batch_size=batch_size * 2,
        shuffle=False,
        sampler=test_sampler,
        num_workers=num_workers,
        pin_memory=True,
    )
    return train_loader, test_loader, train_sampler


def dataset_stats(loader, max_batches=50):
    """Recompute the per-channel mean/std from a loader (sanity check only)."""
    total, mean, sq_mean = 0, torch.zeros(3), torch.zeros(3)
    for i, (images, _) in enumerate(loader):
        if i >= max_batches:
            break
        n = images.size(0)
        flat = images.transpose(0, 1).reshape(3, -1)
        mean += flat.mean(dim=1) * n
        sq_mean += (flat ** 2).mean(dim=1) * n
        total += n
    mean /= total
    std = (sq_mean / total - mean ** 2).sqrt()
    return mean, std
