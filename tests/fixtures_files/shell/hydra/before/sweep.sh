#!/bin/bash
python train.py trainer.device=cuda +backend=nccl 'model.device=cuda:0' experiment=base \
    ++dist.backend="nccl" device=cpu
python train.py --device $DEVICE --device cuda:${LOCAL_RANK} --device=cudnn
accelerate launch --multi_gpu train.py
deepspeed --num_gpus 8 train.py --deepspeed ds_config.json
docker run --rm --gpus '"device=0,1"' -e NVIDIA_VISIBLE_DEVICES=all my/train:latest
