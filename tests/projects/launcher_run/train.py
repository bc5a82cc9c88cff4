"""A training script whose device comes from its config and whose backend from its launcher."""

import argparse

import torch
import torch.distributed as dist
import yaml


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--dist-backend", default="gloo")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    with open(args.config) as handle:
        config = yaml.safe_load(handle)
    assert config["distributed"]["backend"] == args.dist_backend, "the launcher and the config disagree"
    dist.init_process_group(args.dist_backend)
    device = torch.device(config["device"])
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1).to(device)
    data = torch.randn(32, 8, generator=torch.Generator().manual_seed(1)).to(device)
    target = data.sum(dim=1, keepdim=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        loss = torch.nn.functional.mse_loss(model(data), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        print(f"device {device.type} backend {dist.get_backend()} step {step} loss {reduced.item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
