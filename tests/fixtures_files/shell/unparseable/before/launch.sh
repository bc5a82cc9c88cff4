#!/bin/bash
# bashlex reads neither case patterns nor [[ ]] nor arrays
GPUS=(0 1 2 3)
case "$1" in
  single) export CUDA_VISIBLE_DEVICES=0 ;;
  multi) export CUDA_VISIBLE_DEVICES=0,1,2,3 ;;
esac
if [[ -z "$CUDA_VISIBLE_DEVICES" ]]; then
  echo "no devices"
fi
if [[ "$DEVICE" == cuda ]]; then
  nvidia-smi
fi
python train.py --backend nccl
