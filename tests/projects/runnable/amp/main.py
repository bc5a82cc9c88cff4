"""Automatic mixed precision with autocast and GradScaler (after the PyTorch AMP recipe), on
generated data; mixed precision is used when CUDA is there.

    python main.py --epochs 2 --checkpoint /tmp/amp.pt
"""
import argparse

import torch
from torch.cuda.amp import GradScaler


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--checkpoint', default='')
    args = parser.parse_args()

    use_amp = torch.cuda.is_available()
    device = 'cuda' if use_amp else 'cpu'

    torch.manual_seed(0)
    in_size, out_size, num_layers, num_batches = 64, 16, 3, 6
    data = [torch.randn(args.batch_size, in_size, device=device) for _ in range(num_batches)]
    targets = [torch.randn(args.batch_size, out_size, device=device) for _ in range(num_batches)]
    loss_fn = torch.nn.MSELoss().cuda() if use_amp else torch.nn.MSELoss()

    net = make_model(in_size, out_size, num_layers).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    scaler = GradScaler(enabled=use_amp)
    print('amp {} scaler {} device {}'.format(use_amp, scaler.is_enabled(), device))

    for epoch in range(args.epochs):
        for step, (input, target) in enumerate(zip(data, targets)):
            with torch.cuda.amp.autocast(enabled=use_amp):
                output = net(input)
                loss = loss_fn(output, target)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            print('epoch {} step {} loss {!r}'.format(epoch, step, loss.item()))

    if args.checkpoint:
        checkpoint = {'model': net.state_dict(), 'optimizer': opt.state_dict(), 'scaler': scaler.state_dict()}
        torch.save(checkpoint, args.checkpoint)
        dev = torch.cuda.current_device() if use_amp else 'cpu'
        checkpoint = torch.load(args.checkpoint, map_location=lambda storage, loc: storage.cuda(dev) if use_amp else storage)
        net.load_state_dict(checkpoint['model'])
        opt.load_state_dict(checkpoint['optimizer'])
        scaler.load_state_dict(checkpoint['scaler'])
        with torch.no_grad(), torch.autocast(device_type=device, dtype=torch.float16, enabled=use_amp):
            loss = loss_fn(net(data[0]), targets[0])
        print('reloaded loss {!r}'.format(loss.item()))


if __name__ == '__main__':
    main()
