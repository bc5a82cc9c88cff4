#!/bin/bash
# bashlex reads neither case patterns nor [[ ]] nor arrays
GPUS=(0 1 2 3)
case "$1" in
  single) export ASCEND_RT_VISIBLE_DEVICES=0 ;;
  multi) export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3 ;;
esac
if [[ -z "$ASCEND_RT_VISIBLE_DEVICES" ]]; then
  echo "no devices"
fi
if [[ "$DEVICE" == cuda ]]; then
  nvidia-smi
fi
python train.py --backend hccl
