import torch


def seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


if __name__ == "__main__":  # a self-test: run as a script, it is an entry too (train.py imports it)
    seed_all(0)
