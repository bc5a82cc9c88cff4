#!/bin/bash
# CRLF script: CUDA_VISIBLE_DEVICES in a comment stays
export ASCEND_RT_VISIBLE_DEVICES=0,1
python train.py \
    --backend hccl \
    --device npu:$LOCAL_RANK
echo "$ASCEND_RT_VISIBLE_DEVICES"
