"""Train ResNet-18 on CIFAR-10 with DDP and mixed precision.

Single process:   python train.py --gpu 0 --amp
Multi process:    torchrun --nproc_per_node=4 train.py --amp
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.cuda.amp import autocast as ac, GradScaler

from data import get_dataloaders
from model import count_parameters, resnet18_cifar
from utils import (AverageMeter, accuracy, load_checkpoint, log_memory,
                   save_checkpoint, set_seed)


def parse_args():
    p = argparse.ArgumentParser(description='CIFAR-10 ResNet-18 training')
    p.add_argument('--data', default='./data')
    p.add_argument('--synthetic', action='store_true',
                   help='random CIFAR-shaped data instead of CIFAR-10 (smoke test)')
    p.add_argument('--device', default='cuda', choices=['cuda', 'cpu'])
    p.add_argument('--dist-backend', default='nccl',
                   help="process group backend; empty string falls back to nccl")
    p.add_argument('--gpu', type=int, default=None, help='GPU id to use')
    p.add_argument('--local_rank', '--local-rank', type=int,
                   default=int(os.environ.get('LOCAL_RANK', -1)))
    p.add_argument('--epochs', type=int, default=30)
    p.add_argument('--lr', type=float, default=0.1)
    p.add_argument('--batch-size', type=int, default=128, help='per-process batch size')
    p.add_argument('--workers', type=int, default=4)
    p.add_argument('--amp', action='store_true', help='enable mixed precision')
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--resume', default='', help='path to checkpoint')
    p.add_argument('--out-dir', default='./checkpoints')
    return p.parse_args()


def setup_distributed(args):
    args.distributed = int(os.environ.get('WORLD_SIZE', 1)) > 1
    args.rank = 0
    if not args.distributed:
        return
    os.environ.setdefault('NCCL_ASYNC_ERROR_HANDLING', '1')
    if args.gpu is None:
        args.gpu = args.local_rank
    torch.cuda.set_device(args.gpu)
    if not args.dist_backend:
        # Older launch scripts passed an empty backend; NCCL is the only sane choice on GPUs.
        dist.init_process_group('nccl', init_method='env://')
    else:
        assert args.dist_backend in ['gloo', 'nccl'], f'unsupported backend {args.dist_backend}'
        if args.dist_backend == 'nccl':
            print(f'[rank {os.environ.get("RANK")}] using NCCL, local GPU {args.gpu}')
        init_process_group(backend=args.dist_backend, init_method='env://')
    args.rank = dist.get_rank()


def warmup(model, device, batch_size):
    """Run a couple of dummy steps so cuDNN autotuning is out of the timed loop."""
    x = torch.randn(batch_size, 3, 32, 32)
    x = x.to(device=device, dtype=torch.float32)
    with torch.no_grad():
        for _ in range(2):
            model(x)


def train_one_epoch(model, loader, criterion, optimizer, scaler, epoch, args):
    model.train()
    losses, top1 = AverageMeter('loss'), AverageMeter('acc@1', ':.2f')
    start = time.time()
    for step, (images, target) in enumerate(loader):
        if args.gpu is not None:
            images = images.to(args.gpu, non_blocking=True)
            target = target.cuda(non_blocking=True)

        optimizer.zero_grad(set_to_none=True)
        with ac(enabled=args.amp):
            output = model(images)
            loss = criterion(output, target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

        acc1, = accuracy(output, target)
        losses.update(loss.item(), images.size(0))
        top1.update(acc1, images.size(0))
        if args.rank == 0 and step % 100 == 0:
            print(f'epoch {epoch} step {step}/{len(loader)} {losses} {top1}')

    if args.device == 'cuda':
        torch.cuda.synchronize()
    return losses.avg, top1.avg, time.time() - start


def evaluate(model, loader, criterion, device):
    model.eval()
    totals = torch.zeros(3, device=device)  # loss sum, correct, count
    with torch.no_grad():
        for images, target in loader:
            images = images.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            if images.device.type == 'cuda':
                with torch.autocast(device_type='cuda', dtype=torch.float16):
                    output = model(images)
            else:
                output = model(images)
            output = output.float()
            totals[0] += criterion(output, target).item() * images.size(0)
            totals[1] += (output.argmax(dim=1) == target).sum()
            totals[2] += images.size(0)
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(totals)
    loss_sum, correct, count = totals.tolist()
    return loss_sum / count, 100.0 * correct / count


def main():
    args = parse_args()
    setup_distributed(args)
    set_seed(args.seed + args.rank)

    if args.device == 'cuda':
        if args.rank == 0:
            if 'CUDA_VISIBLE_DEVICES' in os.environ:
                visible = os.environ['CUDA_VISIBLE_DEVICES']
                print(f'CUDA_VISIBLE_DEVICES={visible}')
            print(f'{torch.cuda.device_count()} GPU(s) visible')
        if args.gpu is None:
            args.gpu = 0
        torch.cuda.set_device(args.gpu)
        torch.backends.cudnn.benchmark = True
        print(f"Training on cuda device {args.gpu}")

    model = resnet18_cifar(num_classes=10)
    if args.rank == 0:
        print(f'model: resnet18_cifar, {count_parameters(model) / 1e6:.2f}M params')

    if args.distributed:
        model.cuda(args.gpu)
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = DDP(model, device_ids=[args.gpu])
        device = torch.device(f'cuda:{args.gpu}')
    elif args.device == 'cuda':
        device = torch.device(f'cuda:{args.gpu}')
        model = model.to(device)
    else:
        device = torch.device('cpu')
        model = model.to(device)

    if args.rank == 0:
        print(f'model on {device}')

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                                weight_decay=5e-4, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = GradScaler(enabled=args.amp)

    start_epoch, best_acc = 0, 0.0
    if args.resume:
        ckpt = load_checkpoint(args.resume, args.gpu)
        bare = model.module if isinstance(model, DDP) else model
        bare.load_state_dict(ckpt['model'])
        optimizer.load_state_dict(ckpt['optimizer'])
        scheduler.load_state_dict(ckpt['scheduler'])
        scaler.load_state_dict(ckpt['scaler'])
        start_epoch, best_acc = ckpt['epoch'] + 1, ckpt['best_acc']
        print(f"resumed from '{args.resume}' (epoch {ckpt['epoch']})")

    train_loader, test_loader, train_sampler = get_dataloaders(
        args.data, args.batch_size, args.workers, distributed=args.distributed,
        synthetic=args.synthetic)
    if args.device == 'cuda':
        warmup(model, device, args.batch_size)

    for epoch in range(start_epoch, args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        loss, acc, secs = train_one_epoch(model, train_loader, criterion, optimizer,
                                          scaler, epoch, args)
        scheduler.step()
        val_loss, val_acc = evaluate(model, test_loader, criterion, device)

        if args.rank == 0:
            print(f'epoch {epoch}: train loss {loss:.4f} acc {acc:.2f} | '
                  f'val loss {val_loss:.4f} acc {val_acc:.2f} | {secs:.1f}s')
            log_memory(prefix=f'epoch {epoch} ')
            is_best = val_acc > best_acc
            best_acc = max(val_acc, best_acc)
            bare = model.module if isinstance(model, DDP) else model
            save_checkpoint({'epoch': epoch, 'model': bare.state_dict(),
                             'optimizer': optimizer.state_dict(),
                             'scheduler': scheduler.state_dict(),
                             'scaler': scaler.state_dict(), 'best_acc': best_acc},
                            is_best, args.out_dir)

    if args.rank == 0:
        # Half-precision copy of the final weights for deployment.
        bare = model.module if isinstance(model, DDP) else model
        half = {k: v.to(torch.float16) if v.is_floating_point() else v
                for k, v in bare.state_dict().items()}
        torch.save(half, os.path.join(args.out_dir, 'resnet18_cifar_fp16.pth'))
        print(f'best val acc: {best_acc:.2f}')

    if args.device == 'cuda':
        torch.cuda.empty_cache()
    if args.distributed:
        dist.destroy_process_group()


if __name__ == '__main__':
    main()
