import torch


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


if __name__ == "__main__":  # a self-test, but the module is imported by train.py: not an entry
    seed_all(0)
