"""Library helpers that default to the CUDA device (rules/library_defaults.yaml), called through a
module of the project that re-exports them: yolov5's ``utils/torch_utils.py`` imports
ultralytics' ``autocast(enabled, device="cuda")`` as ``smart_amp_autocast``, and ``train.py``
calls that. Without ``device``, the helper is ``torch.amp.autocast("cuda")``, which disables
itself on an NPU: training ran in float32 while the GradScaler still scaled."""

import os
import sys

import pytest
from helpers import python_change_rows, run_cli, write

ULTRALYTICS = """\
import torch


def autocast(enabled: bool, device: str = "cuda"):
    return torch.amp.autocast(device, enabled=enabled)
"""
REEXPORT = """\
import torch

try:
    from ultralytics.utils.torch_utils import autocast as smart_amp_autocast
except ImportError:
    smart_amp_autocast = None
"""
TRAIN = """\
import torch

from utils.torch_utils import smart_amp_autocast


def step(amp):
    with smart_amp_autocast(amp):
        return torch.is_autocast_enabled("{device}")


print(step(True))
"""
RELATIVE = """\
from .torch_utils import smart_amp_autocast


def step(amp):
    with smart_amp_autocast(amp):
        return 1
"""
OWN_HELPER = """\
def smart_amp_autocast(enabled):
    return enabled
"""
OTHER = """\
from tools.helpers import smart_amp_autocast

smart_amp_autocast(True)
"""


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "yolo"
    write(root / "utils" / "__init__.py", "")
    write(root / "utils" / "torch_utils.py", REEXPORT)
    write(root / "utils" / "loss.py", RELATIVE)
    write(root / "tools" / "helpers.py", OWN_HELPER)
    write(root / "tools" / "other.py", OTHER)
    write(root / "train.py", TRAIN.format(device="cuda"))
    write(tmp_path / "site" / "ultralytics" / "utils" / "torch_utils.py", ULTRALYTICS)
    for package in ("ultralytics", "ultralytics/utils"):
        write(tmp_path / "site" / package / "__init__.py", "")
    return root


def migrated(project, tmp_path, *options):
    result = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "yolo_msft"


def test_a_re_exported_helper_gets_the_npu_where_the_project_calls_it(project, tmp_path):
    out = migrated(project, tmp_path)
    expected = TRAIN.format(device="npu").replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    assert (out / "train.py").read_text() == expected.replace(
        "smart_amp_autocast(amp)", "smart_amp_autocast(amp, device='npu')"
    )
    # a relative import is not followed; a project's own function of that name is not the helper
    assert (out / "utils" / "loss.py").read_text() == RELATIVE
    assert (out / "tools" / "other.py").read_text() == OTHER
    rows = [row for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")]
    assert [row for row in rows if row[-1] == "G2N094"] == [
        [
            "train.py",
            "7",
            "7",
            "MODIFY",
            "pass device='npu' to ultralytics.utils.torch_utils.autocast",
            "G2N094",
        ]
    ]


def test_the_portable_tree_passes_the_device_type(project, tmp_path):
    out = migrated(project, tmp_path, "--target", "portable")
    assert "    with smart_amp_autocast(amp, device=DEVICE_TYPE):\n" in (out / "train.py").read_text()


def test_the_migrated_step_runs_in_mixed_precision_on_the_npu(project, tmp_path):
    """Under the stand-in, with ultralytics' helper installed beside the project (not migrated):
    autocast is on for the NPU with the keyword, off without it (the migration before)."""
    pytest.importorskip("torch")
    out = migrated(project, tmp_path)
    without = (out / "train.py").read_text().replace(", device='npu'", "")
    write(out / "train_without_device.py", without)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    outputs = [
        run_cli("run", "--", sys.executable, script, cwd=out, env=env)
        for script in ("train.py", "train_without_device.py")
    ]
    assert [(run.returncode, run.stdout) for run in outputs] == [(0, "True\n"), (0, "False\n")], [
        run.stderr for run in outputs
    ]
