"""A command a CommandReportRule knows (``nvidia-smi``) is reported where Python code runs it
through the standard library, as where a launcher runs it: YOLOX counts its GPUs with
``os.popen("nvidia-smi -L")``, which on an Ascend host finds none (no nvidia-smi there), so
``get_num_devices()`` is 1 whatever the NPU count and ``train.py -d 8`` stops."""

import json

from helpers import rows, run_cli, write

CODE = """\
import os
import subprocess as sp

import torch


def get_num_devices():
    gpu_list = os.getenv('CUDA_VISIBLE_DEVICES', None)
    if gpu_list is not None:
        return len(gpu_list.split(','))
    devices_list_info = os.popen("nvidia-smi -L")
    return len(devices_list_info.read().strip().split("\\n"))


def gpu_mem(device):
    out = sp.check_output(["nvidia-smi", "--query-gpu=memory.total", "--format=csv"])
    os.system(f"/usr/bin/nvidia-smi -i {device}")
    print("nvidia-smi is only named here")
    sp.run(command_line)
    return torch.cuda.device_count(), out
"""


def test_each_command_line_the_code_runs_is_reported_and_check_fails(tmp_path):
    write(tmp_path / "dist.py", CODE)
    result = run_cli("check", tmp_path / "dist.py", "--format", "json")
    assert result.returncode == 1
    found = [
        (f["line"], f["rule"], f["severity"])
        for f in json.loads(result.stdout)["findings"]
        if f["rule"] == "G2N800"
    ]
    assert found == [(11, "G2N800", "error"), (16, "G2N800", "error"), (17, "G2N800", "error")]


def test_migrate_reports_it_and_leaves_the_line(tmp_path):
    write(tmp_path / "proj" / "dist.py", CODE)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "out" / "proj_msft" / "dist.py").read_text()
    assert 'os.popen("nvidia-smi -L")' in migrated
    manual = rows(tmp_path / "out" / "proj_msft" / "transplant_result_file" / "manual_work.csv")
    assert [(r[0], r[1], r[3], r[5], r[6]) for r in manual if r[3] == "nvidia-smi"] == [
        ("dist.py", line, "nvidia-smi", "unsupported", "G2N800") for line in ("11", "16", "17")
    ]
