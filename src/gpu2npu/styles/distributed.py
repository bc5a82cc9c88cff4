"""Single card to multi-card (msFmkTransplt's ``distributed -m MAIN -t MODEL``): the full
migration, the device index of each process from ``LOCAL_RANK``, and in the main script the
process group, DistributedDataParallel, sharded training loaders and rank-0 logging and saving
(rules/distributed/, the pass gpu2npu.rewrite.distributed). Writes ``<name>_msft_multi`` with a
``torchrun`` launcher."""

from gpu2npu.rules.model import NORMAL_SWITCHES
from gpu2npu.styles import Style

LAUNCHER = """#!/bin/sh
# Start the migrated training on NPUS cards of this machine, one process per card:
#   sh run_distributed_npu.sh [NPUS] [arguments of {main}...]    (NPUS default: 8)
# {how}
NPUS=${{1:-8}}
[ "$#" -gt 0 ] && shift
export HCCL_WHITELIST_DISABLE=1
{start}exec torchrun --standalone --nproc_per_node="$NPUS" {script} "$@"
"""
# for a script whose paths are relative to its own folder: started there, as its README does
START_IN_FOLDER = """# its paths ({path}) are relative to its folder: it starts there,
# and relative paths among the arguments are read from there too
cd "$(dirname "$0")"/{folder} || exit 1
"""

# what the launcher's header says of the script: one it made multi-card, one that distributes itself
SETS_UP_HCCL = (
    "torchrun gives each process RANK, LOCAL_RANK and WORLD_SIZE; the script sets up hccl from them."
)
DISTRIBUTES_ITSELF = (
    "The script distributes itself ({setup}).\n"
    "# torchrun gives each process RANK, LOCAL_RANK and WORLD_SIZE, which it may not read (its own\n"
    "# launcher, --num-gpus, an MPI rank): use this only where it does (init_method env://,\n"
    "# LOCAL_RANK), else start it with its own launcher."
)

STYLE = Style(
    name="distributed",
    help="the full migration made multi-card: process group, DDP, sharded loaders "
    "(one --entry: the main script)",
    rule_folders=("", "every_mode", "device_index", "distributed"),
    switches=NORMAL_SWITCHES | {"distributed"},
    order=3,
    entry_scripts=True,
    one_entry=True,
    output_suffix="_msft_multi",
    launcher=LAUNCHER,
    launcher_name="run_distributed_npu.sh",
    launcher_headers=(SETS_UP_HCCL, DISTRIBUTES_ITSELF),
    launcher_start=START_IN_FOLDER,
)
