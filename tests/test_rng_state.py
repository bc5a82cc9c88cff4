"""Megatron's ``_set_cuda_rng_state`` (DeepSpeed-Domino, gpt-neox) restores the RNG state through
``torch.cuda._lazy_call``, which on an NPU machine waits for a CUDA initialisation that never
comes: activation recomputation drew other dropout masks. Migrated, it is torch_npu's; run under
the stand-in."""

import sys

import pytest
from helpers import run_cli, write

PROGRAM = """\
import torch
from torch.cuda import _lazy_call

torch.cuda.manual_seed(1)
state = torch.cuda.get_rng_state()
torch.cuda.manual_seed(2)


def restore():
    torch.cuda.set_rng_state(state)


_lazy_call(restore)
print(torch.equal(torch.cuda.get_rng_state(), state))
"""


def test_a_lazily_restored_rng_state_is_restored_on_the_npu(tmp_path):
    write(tmp_path / "proj" / "rng.py", PROGRAM)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    text = (out / "rng.py").read_text()
    assert text.startswith("import torch\nimport torch_npu\nfrom torch_npu.npu import _lazy_call\n"), text
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "rng.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "True\n"), run.stderr
