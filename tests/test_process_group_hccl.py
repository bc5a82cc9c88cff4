"""``torch.distributed.ProcessGroupNCCL`` exists only in torch's CUDA build, so on an NPU host
``from torch.distributed import ProcessGroupNCCL`` (ColossalAI's legacy p2p_v2.py) fails on import.
torch_npu has ``torch_npu._C._distributed_c10d.ProcessGroupHCCL`` on every line (G2N017), and
transfer_to_npu patches the name only from its 2.7.1 branch (auto: G2N718 before it)."""

import sys

import pytest
from helpers import run_cli, write

PROGRAM = """\
import torch
from torch.distributed import ProcessGroupNCCL


def pair_group_options() -> ProcessGroupNCCL.Options:
    return torch.distributed.ProcessGroupNCCL.Options()


if __name__ == "__main__":
    print(ProcessGroupNCCL.__name__, type(pair_group_options()).__name__)
"""
RENAMED_IMPORT = "from torch_npu._C._distributed_c10d import ProcessGroupHCCL as ProcessGroupNCCL\n"
RENAMED_CALL = "    return torch_npu._C._distributed_c10d.ProcessGroupHCCL.Options()\n"
CASES = {
    "full, 2.8.0": ("-v", "2.8.0"),
    "full, 2.1.0": ("-v", "2.1.0"),
    "full, 1.11.0": ("-v", "1.11.0"),
    "auto, 2.1.0": ("-v", "2.1.0", "--mode", "auto"),
}


def _migrate(tmp_path, options):
    write(tmp_path / "proj" / "p2p.py", PROGRAM)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "proj_msft"


@pytest.mark.parametrize("options", CASES.values(), ids=CASES)
def test_process_group_nccl_becomes_torch_npus_hccl_group(tmp_path, options):
    out = _migrate(tmp_path, options)
    text = (out / "p2p.py").read_text()
    assert (RENAMED_IMPORT in text, RENAMED_CALL in text) == (True, True), text
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "p2p.py", cwd=out)
    assert (run.returncode, run.stdout) == (0, "ProcessGroupHCCL Options\n"), run.stderr


def test_auto_leaves_it_to_transfer_to_npu_from_2_7_1(tmp_path):
    out = _migrate(tmp_path, ("-v", "2.7.1", "--mode", "auto"))
    assert "from torch.distributed import ProcessGroupNCCL\n" in (out / "p2p.py").read_text()
