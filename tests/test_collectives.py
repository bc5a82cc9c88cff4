"""Collectives HCCL refuses (ReducedDtypeRule): a float64 tensor all-reduced in the function that
makes it is reported as failing on the NPU (ALBEF's and ConvNeXt-V2's SmoothedValue), in every
mode and target, and not where --optimize=all makes it float32 first."""

import pytest
from helpers import builtin_index, run_cli, write

from gpu2npu.rewrite.engine import migrate_source

SMOOTHED_VALUE = (
    "import torch\n"
    "import torch.distributed as dist\n"
    "\n"
    "\n"
    "class SmoothedValue:\n"
    "    def synchronize_between_processes(self):\n"
    "        t = torch.tensor([self.count, self.total], dtype=torch.float64, device='cuda')\n"
    "        dist.barrier()\n"
    "        dist.all_reduce(t)\n"
    "        self.count = int(t[0])\n"
    "\n"
    "\n"
    "def total(values, device, gloo_group):\n"
    "    s = torch.stack(values).double().cuda()\n"
    "    dist.all_reduce(tensor=s)\n"
    "    c = torch.tensor([len(values)], dtype=torch.float64)  # on the CPU: a gloo group takes it\n"
    "    dist.all_reduce(c, group=gloo_group)\n"
    "    n = torch.tensor([len(values)], dtype=torch.float32, device=device)\n"
    "    dist.all_reduce(n)\n"
    "    return s, n, c\n"
    "\n"
    "\n"
    "def elsewhere(t):\n"
    "    dist.all_reduce(t)  # another function's float64 t: not known here\n"
)
TIP = (
    "HCCL's all_reduce and reduce refuse it on the NPU (RuntimeError: Unsupported data type; NCCL reduced "
    "it): make the tensor float32 where the precision allows (migrate --optimize=all does so where it is "
    "made on the device, G2N2080), or reduce it in a gloo group on the CPU"
)


def reduction_rows(index):
    result = migrate_source(SMOOTHED_VALUE.encode(), index, path="utils.py")
    return [(k.line, k.name, k.works, k.tip) for k in result.kept if k.rule_id == "G2N174"]


@pytest.mark.parametrize("style,target", [("full", "npu"), ("auto", "npu"), ("full", "portable")])
def test_a_float64_tensor_all_reduced_where_it_is_made_is_reported_as_failing(style, target):
    assert reduction_rows(builtin_index(style=style, target=target)) == [
        (9, "torch.distributed.all_reduce", False, f"t is torch.float64 (line 7): {TIP}"),
        (15, "torch.distributed.all_reduce", False, f"s is torch.Tensor.double (line 14): {TIP}"),
    ]


def test_optimize_all_makes_the_device_counter_float32_and_leaves_only_the_other_row():
    assert reduction_rows(builtin_index(optimize=True)) == [
        (15, "torch.distributed.all_reduce", False, f"s is torch.Tensor.double (line 14): {TIP}"),
    ]


def test_check_fails_on_it(tmp_path):
    write(tmp_path / "proj" / "utils.py", SMOOTHED_VALUE)
    result = run_cli("check", tmp_path / "proj", "--no-cache")
    assert result.returncode == 1, result.stdout
    errors = [line.split("  ")[1:3] for line in result.stdout.splitlines() if "G2N174" in line]
    assert errors == [["9:1", "error"], ["15:1", "error"]]


TRAINING_STATS = (
    "import torch\n"
    "\n"
    "_counter_dtype = torch.float64\n"
    "\n"
    "\n"
    "def _sync(names, device):\n"
    "    deltas = []\n"
    "    for name in names:\n"
    "        delta = torch.zeros([3], dtype=_counter_dtype, device=device)\n"
    "        deltas.append(delta)\n"
    "    deltas = torch.stack(deltas)\n"
    "    torch.distributed.all_reduce(deltas)\n"
    "    kept = []\n"
    "    kept.append(torch.zeros([3], device=device))\n"
    "    torch.distributed.all_reduce(torch.cat(kept))\n"
)


@pytest.mark.parametrize("style", ["full", "auto"])
def test_a_dtype_constant_and_a_stack_of_float64_counters_are_followed(style):
    """stylegan2-ada's training_stats makes its counters in a module constant's dtype
    (``_counter_dtype = torch.float64``), stacks them and all-reduces the stack at every tick:
    HCCL refused it in the stand-in's 2-rank run, and no G2N174 row said so."""
    result = migrate_source(TRAINING_STATS.encode(), builtin_index(style=style), path="training_stats.py")
    assert [(k.line, k.name, k.tip) for k in result.kept if k.rule_id == "G2N174"] == [
        (12, "torch.distributed.all_reduce", f"deltas is torch.float64 (line 11): {TIP}"),
    ]
