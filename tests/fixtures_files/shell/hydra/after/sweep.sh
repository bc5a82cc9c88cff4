#!/bin/bash
python train.py trainer.device=npu +backend=hccl 'model.device=npu:0' experiment=base \
    ++dist.backend="hccl" device=cpu
python train.py --device $DEVICE --device npu:${LOCAL_RANK} --device=cudnn
accelerate launch --multi_gpu train.py
deepspeed --num_gpus 8 train.py --deepspeed ds_config.json
docker run --rm --gpus '"device=0,1"' -e NVIDIA_VISIBLE_DEVICES=all my/train:latest
