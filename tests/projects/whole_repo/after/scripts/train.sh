#!/usr/bin/env bash
# Launch on 8 GPUs. Set CUDA_VISIBLE_DEVICES to pick the cards.
set -euo pipefail
export ASCEND_RT_VISIBLE_DEVICES=${ASCEND_RT_VISIBLE_DEVICES:-0,1,2,3,4,5,6,7}
export NCCL_DEBUG=INFO
nvidia-smi
torchrun --nproc_per_node=8 train.py \
    --dist-backend hccl \
    --device "npu"
echo "done with CUDA_VISIBLE_DEVICES=$ASCEND_RT_VISIBLE_DEVICES"
