"""Queries of the autocast state without a device (rules/autocast_state.yaml): they answer for
CUDA's autocast, so under ``torch.autocast('npu')`` PixArt's MPT LPLayerNorm stayed in float32
and mamba-style ``requires_conversion`` cast to float32. Migrated, they answer for the NPU; run
under the stand-in."""

import sys

import pytest
from helpers import run_cli, write

PROGRAM = """\
import torch


def low_precision(x):
    if torch.is_autocast_enabled():
        return x.to(torch.get_autocast_gpu_dtype())
    return x


with torch.autocast("cuda", dtype=torch.bfloat16):
    print(low_precision(torch.ones(2).cuda()).dtype)
"""
QUERIES = {
    "2.8.0": ("torch.is_autocast_enabled(device_type='npu')", "torch.npu.get_autocast_dtype()"),
    "2.1.0": ("torch.npu.is_autocast_enabled()", "torch.npu.get_autocast_dtype()"),
}


@pytest.mark.parametrize("version", sorted(QUERIES))
def test_autocast_queries_answer_for_the_npu(tmp_path, version):
    write(tmp_path / "proj" / "norm.py", PROGRAM)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", version, "--no-cache")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    enabled, dtype = QUERIES[version]
    expected = (
        PROGRAM.replace("import torch\n", "import torch\nimport torch_npu\n", 1)
        .replace("torch.is_autocast_enabled()", enabled)
        .replace("torch.get_autocast_gpu_dtype()", dtype)
        .replace('"cuda"', '"npu"')
        .replace(".cuda()", ".npu()")
    )
    assert (out / "norm.py").read_text() == expected
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "norm.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "torch.bfloat16\n"), run.stderr
