import argparse

import torch
import torch_npu
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="hccl")
    parser.add_argument("--device", default="npu")
    args = parser.parse_args()
    dist.init_process_group(args.dist_backend)
    model = torch.nn.Linear(4, 2).npu()
    print(model(torch.ones(1, 4, device=args.device)))


if __name__ == "__main__":
    main()
