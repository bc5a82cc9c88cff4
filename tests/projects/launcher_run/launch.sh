#!/usr/bin/env bash
# Train on one GPU; CUDA_VISIBLE_DEVICES picks it.
set -euo pipefail
cd "$(dirname "$0")"
export CUDA_VISIBLE_DEVICES=0
torchrun --standalone --nproc_per_node=1 train.py --config config.yaml --dist-backend nccl "$@"
