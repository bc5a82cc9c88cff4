#!/bin/sh
# réglage des GPU (latin-1): CUDA_VISIBLE_DEVICES
export CUDA_VISIBLE_DEVICES=0  # première carte
echo "carte utilisée: $CUDA_VISIBLE_DEVICES ÿ"
nvidia-smi
