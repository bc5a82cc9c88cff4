"""``torch.distributed.ProcessGroupNCCL`` exists only in torch's CUDA build, so on an NPU host
``from torch.distributed import ProcessGroupNCCL`` (ColossalAI's legacy p2p_v2.py) fails on import.
torch_npu has ``torch_npu._C._distributed_c10d.ProcessGroupHCCL`` on every line (G2N017), and
transfer_to_npu patches the name only from its 2.7.1 branch (auto: G2N718 before it)."""

import sys

import pytest
from helpers import rows, run_cli, write

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


HIGH_PRIORITY = """\
import torch
from torch.distributed import ProcessGroupNCCL


def options():
    return ProcessGroupNCCL.Options(is_high_priority_stream=True)


def plain():
    return ProcessGroupNCCL.Options()


if __name__ == "__main__":
    print(type(plain()).__name__)
    print(options().is_high_priority_stream)
"""
HIGH_PRIORITY_CASES = {
    "full": (),
    "auto": ("--mode", "auto", "-v", "2.7.1"),
    "-s": ("-s",),
}


@pytest.mark.parametrize("options", HIGH_PRIORITY_CASES.values(), ids=HIGH_PRIORITY_CASES)
def test_options_built_with_the_high_priority_keyword_are_an_error(tmp_path, options):
    """torch_npu's ProcessGroupHCCL.Options takes no argument (fairseq2's gang.py, Megatron's
    get_nccl_options): the call is kept and reported, as the stand-in's TypeError proves; the
    plain Options() has no row."""
    write(tmp_path / "proj" / "gang.py", HIGH_PRIORITY)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft"
    assert (
        "    return ProcessGroupNCCL.Options(is_high_priority_stream=True)\n" in (out / "gang.py").read_text()
    )
    found = [
        (row[1], row[3], row[7]) for row in rows(out / "transplant_result_file" / "unsupported_api.csv")[1:]
    ]
    assert found == [("6", "torch.distributed.ProcessGroupNCCL.Options", "rules:G2N388")]
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "gang.py", cwd=out)
    assert run.stdout.startswith("Options\n"), run.stderr
    assert "TypeError" in run.stderr and "is_high_priority_stream=True" in run.stderr, run.stderr


def test_portable_reports_the_nccl_group_that_cpu_and_npu_hosts_lack(tmp_path):
    write(tmp_path / "proj" / "gang.py", HIGH_PRIORITY)
    args = ("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--no-cache", "--target", "portable")
    assert run_cli(*args).returncode == 0
    reports = tmp_path / "out" / "proj_msft" / "transplant_result_file"
    found = [(row[1], row[3], row[7]) for row in rows(reports / "unsupported_api.csv")[1:]]
    assert found == [
        ("2", "torch.distributed.ProcessGroupNCCL", "rules:G2N908"),
        ("6", "torch.distributed.ProcessGroupNCCL.Options", "rules:G2N388"),
    ]
    check = run_cli("check", tmp_path / "proj", "--no-cache", "--target", "portable")
    assert check.returncode == 1, check.stdout
