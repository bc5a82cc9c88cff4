"""``torch.random.fork_rng`` forks CUDA's RNG unless told the device type (torch 2.1 to 2.12), so on
an NPU machine peft's PSOFT and AdaMSS initialisation, which pass the weight's NPU device, raised in
``torch.cuda.get_rng_state``. Migrated, the call names the NPU (G2N379) or, portable, the accelerator
with torch's own default where there is none (G2N903); run under the stand-in and on the CPU."""

import sys

import pytest
from helpers import run_cli, write

PROGRAM = """\
import torch

weight = torch.ones(2, device="cuda")
torch.cuda.manual_seed(1)
state = torch.cuda.get_rng_state()
fork_devices = [weight.device] if weight.device.type == "cuda" else []
with torch.random.fork_rng(devices=fork_devices):
    torch.rand(2, device="cuda")
print(torch.equal(torch.cuda.get_rng_state(), state))
"""
NPU = """\
import torch
import torch_npu

weight = torch.ones(2, device="npu")
torch.npu.manual_seed(1)
state = torch.npu.get_rng_state()
fork_devices = [weight.device] if weight.device.type == "npu" else []
with torch.random.fork_rng(devices=fork_devices, device_type='npu'):
    torch.rand(2, device="npu")
print(torch.equal(torch.npu.get_rng_state(), state))
"""
PORTABLE_CALL = "with torch.random.fork_rng(devices=fork_devices, device_type=ACCELERATOR or 'cuda'):\n"


def _migrate(tmp_path, *options):
    write(tmp_path / "proj" / "init.py", PROGRAM)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "proj_msft"


def test_fork_rng_forks_the_npus_rng(tmp_path):
    out = _migrate(tmp_path)
    assert (out / "init.py").read_text() == NPU
    assert "G2N379" in (out / "transplant_result_file" / "change_list.csv").read_text()
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "init.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "True\n"), run.stderr


def test_portable_fork_rng_forks_the_accelerators_rng_or_cudas_without_one(tmp_path):
    out = _migrate(tmp_path, "--target", "portable")
    assert PORTABLE_CALL in (out / "init.py").read_text()
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "init.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "True\n"), run.stderr


def test_fork_rng_is_left_alone_on_torch_1_11(tmp_path):
    out = _migrate(tmp_path, "-v", "1.11.0")
    assert "fork_rng(devices=fork_devices):" in (out / "init.py").read_text()
