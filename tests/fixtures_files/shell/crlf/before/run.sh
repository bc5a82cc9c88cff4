#!/bin/bash
# CRLF script: CUDA_VISIBLE_DEVICES in a comment stays
export CUDA_VISIBLE_DEVICES=0,1
python train.py \
    --backend nccl \
    --device cuda:$LOCAL_RANK
echo "$CUDA_VISIBLE_DEVICES"
