"""Training the way pytorch/examples' imagenet does without --gpu: when CUDA is there the model is
wrapped in DataParallel, which the NPU does not support; the checkpoint is saved through the
wrapper-agnostic `.module if hasattr(...)` idiom.

    python main.py --steps 12 --checkpoint model.pt
"""
import argparse

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, default=12)
    parser.add_argument('--checkpoint', default='model.pt')
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    if torch.cuda.is_available():
        device = torch.device('cuda')
        model = torch.nn.DataParallel(model).cuda()
    else:
        device = torch.device('cpu')
    print('device {} model {}'.format(device.type, type(model).__name__))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    inputs = torch.randn(args.steps, 16, 8).to(device)
    targets = inputs.sum(dim=2, keepdim=True).cos()
    for step in range(args.steps):
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print('step {} loss {!r}'.format(step, loss.item()))
    to_save = model.module if hasattr(model, 'module') else model
    torch.save(to_save.state_dict(), args.checkpoint)
    print('saved {} tensors'.format(len(torch.load(args.checkpoint))))


if __name__ == '__main__':
    main()
