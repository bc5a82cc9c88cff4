"""Variable-length batches: the shapes of some calls change from batch to batch."""
import torch
from torch.utils.data import DataLoader

from ops import positive_rows


class Lengths(torch.utils.data.Dataset):
    def __len__(self):
        return 3

    def __getitem__(self, index):
        return torch.ones(2 + index, 3)  # runs while the next batch is fetched: not traced


def step(batch):
    mask = batch.sum(dim=2) > 0
    return positive_rows(batch[0]), torch.nonzero(mask)


if __name__ == "__main__":
    loader = DataLoader(Lengths(), batch_size=1)
    weights = torch.ones(3, 4)
    for batch in loader:
        rows, where = step(batch)
        out = torch.matmul(rows, weights)
        scale = torch.ones(1)  # the same shape in every batch: not reported
    print("done")
