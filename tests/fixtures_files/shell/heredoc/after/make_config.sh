#!/bin/bash
export ASCEND_RT_VISIBLE_DEVICES=0
cat > config.env <<EOF
CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES
backend: nccl
EOF
cat <<'YAML' > train.yaml
device: cuda
nvidia-smi
YAML
	cat <<-END
	export CUDA_VISIBLE_DEVICES=1
	END
python train.py --device npu
