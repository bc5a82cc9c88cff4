# escape=`
FROM nvcr.io/nvidia/pytorch:24.01-py3
RUN <<EOF
export CUDA_VISIBLE_DEVICES=0
nvcc --version
EOF
RUN python3 - <<PY
import os
os.environ['CUDA_VISIBLE_DEVICES'] = '0'
PY
RUN python train.py `
    --device cuda
ENTRYPOINT python serve.py --backend nccl
