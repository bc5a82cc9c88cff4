"""Facts of the project's own code: a project class that defines cuda() keeps its calls
everywhere; an attribute the project assigns itself (``self.is_cuda = ...``) keeps its name."""

import sys

from helpers import run_cli, write
from test_standin import require_torch


def test_project_cuda_method_is_kept_across_files(tmp_path):
    write(tmp_path / "proj" / "base.py", "class Pipeline:\n    def cuda(self):\n        return self\n")
    write(tmp_path / "proj" / "child.py", "from base import Pipeline\n\n\nclass Fast(Pipeline):\n    pass\n")
    train = "import torch\nfrom child import Fast\n\np = Fast()\np.cuda()\nx = torch.ones(1).cuda()\n"
    write(tmp_path / "proj" / "train.py", train)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-v", "2.8", "-j", "1")
    assert result.returncode == 0, result.stderr
    migrated = (tmp_path / "out" / "proj_msft" / "train.py").read_text()
    assert migrated == (
        "import torch\nimport torch_npu\nfrom child import Fast\n\np = Fast()\np.cuda()\n"
        "x = torch.ones(1).npu()\n"
    )


OWN_FLAGS = """\
import torch


class Prefetcher:
    def __init__(self, device):
        self.is_cuda = device.type == 'cuda' and torch.cuda.is_available()
        self.is_npu = device.type == 'npu' and torch.npu.is_available()

    def stream(self):
        if self.is_npu:
            return 'npu-stream'
        if self.is_cuda:
            return 'cuda-stream'
        return 'none'


def on_gpu(x):
    return x.is_cuda


print(Prefetcher(torch.device('npu')).stream(), on_gpu(torch.ones(1).cuda()))
"""


def test_an_attribute_the_project_assigns_keeps_its_name(tmp_path):
    """timm's loader sets ``self.is_cuda`` and then its own ``self.is_npu``: renamed, the CUDA
    flag was assigned onto the NPU one, and where it comes second (as here) it overwrote it with
    False, so the NPU lost the project's NPU branch. torch's ``x.is_cuda`` still changes."""
    write(tmp_path / "proj" / "loader.py", OWN_FLAGS)
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "-j", "1")
    assert result.returncode == 0, result.stderr
    migrated = tmp_path / "out" / "proj_msft"
    assert (migrated / "loader.py").read_text() == OWN_FLAGS.replace(
        "import torch\n", "import torch\nimport torch_npu\n", 1
    ).replace("and torch.cuda.is_available()", "and torch.npu.is_available()").replace(
        "return x.is_cuda", "return x.is_npu"
    ).replace("torch.ones(1).cuda()", "torch.ones(1).npu()")
    require_torch()
    run = run_cli("run", "--", sys.executable, "loader.py", cwd=migrated)
    assert (run.returncode, run.stdout) == (0, "npu-stream True\n"), run.stderr
