#!/usr/bin/env bash
# Launch on two GPUs. Set CUDA_VISIBLE_DEVICES to choose them;
# nvidia-smi lists them, and NCCL_DEBUG=INFO helps when NCCL hangs.
set -euo pipefail

export ASCEND_RT_VISIBLE_DEVICES=0,1
export NCCL_DEBUG=INFO
export NCCL_SOCKET_IFNAME=eth0 NCCL_IB_DISABLE=1
export NCCL_MY_TUNING=1   # not a real NCCL variable: reported anyway
NUM_GPUS=$(nvidia-smi -L | wc -l)
echo "training on ${ASCEND_RT_VISIBLE_DEVICES} ($NUM_GPUS GPUs)"
echo 'literal: $CUDA_VISIBLE_DEVICES stays'
echo "run nvidia-smi to watch memory"

torchrun --nproc_per_node="$NUM_GPUS" \
    --master_port 29500 \
    train.py \
    --backend hccl \
    --device "npu" \
    --dist-url 'env://' \
    --output-dir ./out

ASCEND_RT_VISIBLE_DEVICES=0 python eval.py --device=npu:0 --batch-size 64
python -m torch.distributed.launch --nproc_per_node 2 train.py --dist_backend='hccl'
python -m torch.utils.collect_env
