#!/usr/bin/env bash
# Launch 4-GPU data-parallel training on a single node.
# Extra arguments are forwarded to train.py, e.g.:
#   bash launch.sh --epochs 50 --lr 0.2
set -euo pipefail

cd "$(dirname "$0")"

export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3
export NCCL_DEBUG=INFO
export OMP_NUM_THREADS=4

torchrun --nproc_per_node=4 train.py --amp --dist-backend hccl "$@"
