"""migrate --patch FILE: the patch applied to a copy of the input (git apply, patch -p1) gives
the migrated tree byte for byte, its reports folder aside; nothing else is in it."""

import shutil
import stat
import subprocess

import pytest
from helpers import REPO, run_cli, tree_files

from gpu2npu.project.patch import file_patch

REPORTS = "transplant_result_file/"
# files the patch must carry through: line ends, a last line without newline, bytes that are not
# UTF-8, names git quotes or ends with a tab, an unchanged file and a binary one
PROJECT = {
    "train.py": b"import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n",
    "crlf.py": b"import torch\r\nx = torch.zeros(1).cuda()\r\n",
    "no_newline.py": b"import torch\nx = torch.zeros(1).cuda()",
    "latin.py": b"# -*- coding: latin-1 -*-\n# caf\xe9\nimport torch\nx = torch.zeros(1).cuda()\n",
    "with space.py": b"import torch\ntorch.cuda.synchronize()\n",
    'caf\xc3\xa9/q"uote.py'.encode("latin-1").decode("utf-8"): b"import torch\nx = 'cuda'\n",
    "run.sh": b"#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=0\npython train.py\n",
    "unchanged.py": b"print('hello')\n",
    "weights.bin": bytes(range(256)),
}


def make_project(root):
    for rel, data in PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "run.sh").chmod(0o755)


def applied(tmp_path, patch, tool):
    copy = tmp_path / f"applied_{tool}"
    shutil.copytree(tmp_path / "proj", copy)
    if tool == "git":
        command = ["git", "apply", str(patch)]
    else:
        command = ["patch", "-p1", "-s", "-i", str(patch)]
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed")
    result = subprocess.run(command, cwd=copy, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return copy


def migrated_files(tree):
    return {rel: data for rel, data in tree_files(tree).items() if not rel.startswith(REPORTS)}


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_the_patch_applied_to_the_input_gives_the_migrated_tree(tmp_path, tool):
    make_project(tmp_path / "proj")
    patch = tmp_path / "migration.patch"
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--patch", patch)
    assert result.returncode == 0, result.stderr
    assert f"patch: {patch} (git apply, or patch -p1, in " in result.stdout
    out = tmp_path / "out" / "proj_msft"
    expected = migrated_files(out)
    changed = sorted(rel for rel, data in expected.items() if PROJECT[rel] != data)
    assert changed == sorted(set(PROJECT) - {"unchanged.py", "weights.bin"})
    text = patch.read_bytes()
    headers = [line for line in text.splitlines() if line.startswith(b"diff --git ")]
    assert headers == [
        b'diff --git "a/caf\\303\\251/q\\"uote.py" "b/caf\\303\\251/q\\"uote.py"',
        b"diff --git a/crlf.py b/crlf.py",
        b"diff --git a/latin.py b/latin.py",
        b"diff --git a/no_newline.py b/no_newline.py",
        b"diff --git a/run.sh b/run.sh",
        b"diff --git a/train.py b/train.py",
        b"diff --git a/with space.py b/with space.py",
    ]
    assert b"--- a/with space.py\t\n" in text and b"\\ No newline at end of file\n" in text
    copy = applied(tmp_path, patch, tool)
    assert tree_files(copy) == expected
    assert stat.S_IMODE((copy / "run.sh").stat().st_mode) == 0o755


def test_a_launcher_the_mode_writes_is_a_new_executable_file_of_the_patch(tmp_path):
    project = REPO / "tests" / "projects" / "distributed" / "before"
    shutil.copytree(project, tmp_path / "proj")
    patch = tmp_path / "multi.patch"
    result = run_cli(
        "migrate",
        "-i",
        tmp_path / "proj",
        "-o",
        tmp_path / "out",
        "--patch",
        patch,
        "distributed",
        "-m",
        "train.py",
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out" / "proj_msft_multi"
    launchers = [rel for rel in tree_files(out) if not (tmp_path / "proj" / rel).exists()]
    launchers = [rel for rel in launchers if not rel.startswith(REPORTS)]
    assert len(launchers) == 1
    assert f"diff --git a/{launchers[0]} b/{launchers[0]}\nnew file mode 100755\n--- /dev/null\n" in (
        patch.read_text()
    )
    copy = applied(tmp_path, patch, "git")
    assert tree_files(copy) == migrated_files(out)
    assert stat.S_IMODE((copy / launchers[0]).stat().st_mode) & 0o111


def test_file_patch_of_equal_bytes_is_empty_and_of_an_empty_new_file_is_its_header():
    assert file_patch("a.py", b"x\n", b"x\n") == b""
    assert file_patch("n.py", None, b"a\nb") == (
        b"diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n"
        b"@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
    )


@pytest.mark.parametrize(
    "where,message",
    [
        (
            "proj/inside.patch",
            "gpu2npu: error: patch '{tmp}/proj/inside.patch' is inside the input '{tmp}/proj'",
        ),
        ("out", "gpu2npu: error: patch '{tmp}/out' is a directory"),
        ("missing/x.patch", "gpu2npu: error: the folder of patch '{tmp}/missing/x.patch' does not exist"),
        ("out/proj_msft/x.patch", "gpu2npu: error: patch '{tmp}/out/proj_msft/x.patch' is inside the output"),
    ],
)
def test_a_patch_that_cannot_be_written_where_asked_stops_the_run_before_anything_is_written(
    tmp_path, where, message
):
    make_project(tmp_path / "proj")
    (tmp_path / "out").mkdir()
    before = tree_files(tmp_path / "proj")
    result = run_cli("migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--patch", tmp_path / where)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(message.format(tmp=tmp_path))
    assert not (tmp_path / "out" / "proj_msft").exists()
    assert tree_files(tmp_path / "proj") == before


def test_diff_and_patch_together_is_a_usage_error(tmp_path):
    make_project(tmp_path / "proj")
    result = run_cli(
        "migrate", "-i", tmp_path / "proj", "-o", tmp_path / "out", "--diff", "--patch", "x.patch"
    )
    assert result.returncode == 2
    assert "--diff writes nothing and --patch writes a file: pass one of them" in result.stderr
