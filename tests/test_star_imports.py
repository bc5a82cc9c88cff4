"""Names a star import of a project module binds (gpu2npu.project.star_imports). CogVideo's
RIFE.py has no `import torch`: torch arrives through `from .IFNet import *` -> `from .refine
import *` -> `import torch`. Its `"cuda"` became `"npu"` while `torch.cuda.is_available()` stayed,
so on an NPU host the model picked the CPU, with no row."""

import json
import sys

import pytest
from helpers import rows, run_cli, write

from gpu2npu.project.star_imports import module_file, module_level_imports, star_bindings, star_imports

MODEL = """from .IFNet import *

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def step(x):
    torch.cuda.synchronize()
    return F.relu(x.to(device)), nn.Linear


if __name__ == "__main__":
    print(device.type, step(torch.ones(2)).__class__.__name__ if False else device.type == "npu")
"""
MIGRATED = "import torch_npu\n" + MODEL.replace('"cuda"', '"npu"').replace("torch.cuda.", "torch.npu.")


def project(root):
    write(root / "rife" / "__init__.py", "")
    write(
        root / "rife" / "refine.py",
        "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n",
    )
    write(root / "rife" / "IFNet.py", "from .refine import *\n\n_private = 1\n")
    write(root / "rife" / "RIFE.py", MODEL)
    return root


def test_torch_through_two_star_imports_is_torch(tmp_path):
    out = tmp_path / "out"
    result = run_cli("migrate", "-i", project(tmp_path / "proj"), "-o", out, "--no-cache")
    assert result.returncode == 0, result.stderr
    assert (out / "proj_msft" / "rife" / "RIFE.py").read_text() == MIGRATED
    changes = rows(out / "proj_msft" / "transplant_result_file" / "change_list.csv")
    assert [(row[0], row[1], row[4]) for row in changes[1:] if row[0] == "rife/RIFE.py"] == [
        ("rife/RIFE.py", "1", "insert import torch_npu (the module uses the NPU and imports no torch)"),
        ("rife/RIFE.py", "3", 'replace string "cuda" with "npu"'),
        ("rife/RIFE.py", "3", "change function torch.cuda.is_available to torch_npu.npu.is_available"),
        ("rife/RIFE.py", "7", "change function torch.cuda.synchronize to torch_npu.npu.synchronize"),
    ]
    pytest.importorskip("torch")
    run = run_cli("run", "--", sys.executable, "-m", "rife.RIFE", cwd=out / "proj_msft")
    assert (run.returncode, run.stdout) == (0, "npu True\n"), run.stderr


def test_a_kept_call_on_a_star_imported_torch_fails_check(tmp_path):
    root = project(tmp_path / "proj")
    write(
        root / "rife" / "caps.py", "from .IFNet import *\n\nmajor = torch.cuda.get_device_capability()[0]\n"
    )
    result = run_cli("check", ".", "--no-cache", "--format", "json", cwd=root)
    assert result.returncode == 1, result.stderr
    errors = [
        (f["file"], f["line"], f["rule"])
        for f in json.loads(result.stdout)["findings"]
        if f["category"] == "unsupported"
    ]
    assert errors == [("rife/caps.py", 3, "G2N296")]


def test_all_limits_what_a_star_import_binds(tmp_path):
    root = project(tmp_path / "proj")
    write(root / "rife" / "IFNet.py", "from .refine import *\n\n__all__ = ['nn']\n")
    out = tmp_path / "out"
    assert run_cli("migrate", "-i", root, "-o", out, "--no-cache").returncode == 0
    migrated = (out / "proj_msft" / "rife" / "RIFE.py").read_text()
    assert "torch.cuda.is_available()" in migrated and "torch.cuda.synchronize()" in migrated


def test_star_imports_read_off_the_bytes():
    assert star_imports(b"from .IFNet import *\nfrom utils import*\n    from x import *\nimport os\n") == (
        ".IFNet",
        "utils",
    )
    assert star_imports(b"import torch\n") == ()
    data = (
        b"import torch, os as o\nimport torch.nn as nn\n"
        b"from torch.nn import (functional as F,\n    init)\nfrom __future__ import annotations\n"
    )
    assert sorted(module_level_imports(data)) == [
        ("F", "torch.nn.functional"),
        ("init", "torch.nn.init"),
        ("nn", "torch.nn"),
        ("o", "os"),
        ("torch", "torch"),
    ]


def test_the_star_imported_module_is_found_like_python_finds_it():
    files = frozenset({"pkg/__init__.py", "pkg/a.py", "pkg/sub/__init__.py", "utils.py", "src/lib/common.py"})
    assert module_file("pkg/b.py", ".a", files) == "pkg/a.py"
    assert module_file("pkg/b.py", ".sub", files) == "pkg/sub/__init__.py"
    assert module_file("pkg/sub/c.py", "..a", files) == "pkg/a.py"
    assert module_file("pkg/b.py", "utils", files) == "utils.py"
    assert module_file("train.py", "lib.common", files) == "src/lib/common.py"
    assert module_file("train.py", "numpy", files) is None
    assert module_file("train.py", "...x", files) is None


def test_a_cycle_of_star_imports_ends(tmp_path):
    write(tmp_path / "a.py", "from b import *\nimport torch\n")
    write(tmp_path / "b.py", "from a import *\nimport numpy as np\n")
    stars = {"a.py": ("b",), "b.py": ("a",)}
    found = star_bindings(tmp_path, stars, frozenset(stars))
    assert found == {
        "a.py": {"b": (("np", "numpy"), ("torch", "torch"))},
        "b.py": {"a": (("np", "numpy"), ("torch", "torch"))},  # a's own and what a takes from b
    }
