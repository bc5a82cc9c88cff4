"""torch APIs a module of the project re-exports: dinov2's ``dinov2/fsdp/__init__.py`` imports
FSDP's ShardedGradScaler, and ``ssl_meta_arch.py`` builds it as ``from dinov2.fsdp import
ShardedGradScaler``. A rule on the torch name applies there too (G2N386 passes the NPU device to a
GradScaler imported from torch.amp.grad_scaler: without it the scaler is CUDA's and disables
itself on the NPU, so fp16 trains without loss scaling; FSDP's own scaler needs nothing, torch_npu
replaces it), and its API rows name those lines. A name the module binds to something else as
well (``class DataLoader(DataLoader)`` with an ``__init__`` of its own) is its own, not torch's;
one that keeps torch's constructor is built as torch's (tests/test_standin.py)."""

from helpers import python_change_rows, rows, run_cli, write

FSDP = """\
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
from torch.amp.grad_scaler import GradScaler
from torch.amp import GradScaler as Scaler
from torch.jit import script_method
from torch.utils.data import DataLoader

ShardedGradScaler = ShardedGradScaler
"""
OWN_LOADER = """\
from torch.utils.data import DataLoader


class DataLoader(DataLoader):
    def __init__(self, dataset, **options):
        super().__init__(dataset, **options)
"""
TRAIN = """\
import torch
import pkg.fsdp
from pkg.fsdp import ShardedGradScaler, Scaler as S, DataLoader, script_method
from pkg.loaders import DataLoader as OwnLoader

scaler = ShardedGradScaler()
other = pkg.fsdp.GradScaler(init_scale=512.0)
amp = S(enabled=True)
loader = DataLoader([1, 2], batch_size=1, shuffle=True)
own = OwnLoader([1, 2], batch_size=1, shuffle=True)
step = script_method(print)
"""


def migrated(tmp_path, *options):
    root = tmp_path / "proj"
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "fsdp.py", FSDP)
    write(root / "pkg" / "loaders.py", OWN_LOADER)
    write(root / "train.py", TRAIN)
    result = run_cli("migrate", "-i", root, "-o", tmp_path / "out", "--no-cache", *options)
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "proj_msft"


def test_a_re_exported_grad_scaler_gets_the_npu_device(tmp_path):
    out = migrated(tmp_path, "-v", "2.8.0")
    assert (out / "train.py").read_text() == TRAIN.replace(
        "import torch\n", "import torch\nimport torch_npu\n"
    ).replace("(init_scale=512.0)", "(init_scale=512.0, device='npu')").replace(
        "S(enabled=True)", "S(enabled=True, device='npu')"
    )
    changed = [
        row[1:]
        for row in python_change_rows(out / "transplant_result_file" / "change_list.csv")
        if row[0] == "train.py"
    ]
    assert changed == [
        ["1", "1", "INSERT", "insert import torch_npu", "G2N001"],
        ["7", "7", "MODIFY", "pass device='npu' to torch.amp.grad_scaler.GradScaler", "G2N386"],
        ["8", "8", "MODIFY", "pass device='npu' to torch.amp.GradScaler", "G2N007"],
    ]


def test_a_re_exported_api_gets_its_rows(tmp_path):
    """Re-exported names keep their rows at the project's calls: torch 2.1 has no
    torch.amp.GradScaler (G2N372), and TorchScript's script_method is a limit (G2N071)."""
    out = migrated(tmp_path, "-v", "2.1.0")
    table = rows(out / "transplant_result_file" / "unsupported_api.csv")
    assert [(row[0], row[1], row[3], row[7]) for row in table[1:] if row[0] == "train.py"] == [
        ("train.py", "8", "torch.amp.GradScaler", "rules:G2N372"),
        ("train.py", "11", "torch.jit.script_method", "rules:G2N071"),
    ]


def test_a_name_the_module_rebinds_is_not_a_re_export(tmp_path):
    out = migrated(tmp_path, "--optimize=all")
    text = (out / "train.py").read_text()
    assert "loader = DataLoader([1, 2], batch_size=1, shuffle=True, drop_last=True)\n" in text
    assert "own = OwnLoader([1, 2], batch_size=1, shuffle=True)\n" in text
