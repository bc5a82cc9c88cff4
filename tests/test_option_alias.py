"""OptionAliasRule (G2N176): a project written for torch 1.x declares ``--local_rank``, and
torch 2.x's ``python -m torch.distributed.launch`` passes ``--local-rank=N`` (VideoMAE's
``scripts/*.sh``): the migration pins torch 2.x, so the declaration gets the dashed alias."""

import os
import sys

from helpers import gpu2npu_command, run_cli, write
from test_standin import plain_env, require_torch, run_program

PARSER = """\
import argparse
import sys

import torch

parser = argparse.ArgumentParser("pre-training")
parser.add_argument('--local_rank', default=-1, type=int)
args = parser.parse_args()
# one write: the two ranks share the launcher's unbuffered stdout (print's pieces interleaved)
sys.stdout.write("rank %d %s\\n" % (args.local_rank, torch.device("cuda").type))
"""
LAUNCH = "python -m torch.distributed.launch --nproc_per_node=2 --master_port 29533 run_pretraining.py\n"


def project(tmp_path):
    source = tmp_path / "videomae"
    write(source / "run_pretraining.py", PARSER)
    write(source / "scripts" / "pretrain.sh", LAUNCH)
    return source


def launch(tree):
    """scripts/pretrain.sh of ``tree`` on two emulated NPUs, from the project's root."""
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    command = gpu2npu_command() + ["run", "--devices", "2", "--", "sh", "scripts/pretrain.sh"]
    return run_program(command, cwd=tree, env=plain_env(PATH=path))


def test_the_declaration_gets_the_alias_for_torch_2_and_not_for_torch_1(tmp_path):
    source = project(tmp_path)
    for version, declared in (("2.8.0", "'--local_rank', '--local-rank', "), ("1.11.0", "'--local_rank', ")):
        out = tmp_path / version
        assert run_cli("migrate", "-i", source, "-o", out, "-v", version).returncode == 0
        migrated = (out / "videomae_msft" / "run_pretraining.py").read_text()
        assert f"parser.add_argument({declared}default=-1, type=int)" in migrated


def test_the_projects_own_launch_script_starts_every_rank_after_the_migration(tmp_path):
    require_torch()
    source = project(tmp_path)
    original = launch(source)  # torch 2.x's launcher: the original parser refuses its option
    assert original.returncode != 0
    assert "unrecognized arguments: --local-rank=0" in original.stderr
    assert run_cli("migrate", "-i", source, "-o", tmp_path / "out", "-v", "2.8.0").returncode == 0
    migrated = launch(tmp_path / "out" / "videomae_msft")
    assert migrated.returncode == 0, migrated.stderr
    assert sorted(migrated.stdout.splitlines()) == ["rank 0 npu", "rank 1 npu"]
