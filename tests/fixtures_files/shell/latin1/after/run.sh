#!/bin/sh
# réglage des GPU (latin-1): CUDA_VISIBLE_DEVICES
export ASCEND_RT_VISIBLE_DEVICES=0  # première carte
echo "carte utilisée: $ASCEND_RT_VISIBLE_DEVICES ÿ"
nvidia-smi
