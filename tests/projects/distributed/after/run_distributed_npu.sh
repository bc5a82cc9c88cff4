#!/bin/sh
# Start the migrated training on NPUS cards of this machine, one process per card:
#   sh run_distributed_npu.sh [NPUS] [arguments of train.py...]    (NPUS default: 8)
# torchrun gives each process RANK, LOCAL_RANK and WORLD_SIZE; the script sets up hccl from them.
NPUS=${1:-8}
[ "$#" -gt 0 ] && shift
export HCCL_WHITELIST_DISABLE=1
exec torchrun --standalone --nproc_per_node="$NPUS" train.py "$@"
