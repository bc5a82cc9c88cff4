"""Facts that span files: a project class that defines cuda() keeps its calls everywhere."""

from helpers import run_cli, write


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
