"""The per-file result cache: every warm run gives exactly the cold result (trees and reports
compared byte for byte with a --no-cache run), whatever changed in between."""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import gpu2npu_command, run_cli, tree_files, write

from gpu2npu.cli import main
from gpu2npu.project import cache as result_cache

TRAIN = """\
import os
import torch
import torch.distributed as dist
from torch.cuda import amp

os.environ['CUDA_VISIBLE_DEVICES'] = '0'


def main():
    dist.init_process_group('nccl')
    model = torch.nn.Linear(4, 4).cuda()
    scaler = amp.GradScaler()
    x = torch.randn(2, 4, device='cuda')
    torch.cuda.synchronize()
    return model(x), scaler


if __name__ == '__main__':
    main()
"""


def layer(n: int) -> str:
    body = f"    def forward(self, x):\n        return x.cuda() * {n}\n"
    return f"import torch\n\n\nclass Layer{n}(torch.nn.Module):\n{body}"


@pytest.fixture
def project(tmp_path):
    """A project of 30 files (a pool of workers with -j 2): a training script, layers, a
    launcher and a requirements file."""
    root = tmp_path / "proj"
    write(root / "train.py", TRAIN)
    for n in range(26):
        write(root / "layers" / f"layer{n}.py", layer(n))
    write(root / "layers" / "__init__.py", "")
    write(root / "run.sh", "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1\npython train.py --backend nccl\n")
    write(root / "requirements.txt", "torch==2.1.0\napex\n")
    return root


def migrated(tmp_path: Path, root: Path, *flags, name: str = "out") -> tuple:
    """The migrated tree ({path: bytes}, reports included) and the run's standard output."""
    out = tmp_path / name
    done = run_cli("migrate", "-i", root, "-o", out, "-j", "2", *flags)
    assert done.returncode == 0, done.stderr
    return tree_files(out / f"{root.name}_msft"), done


def reused(done: subprocess.CompletedProcess) -> tuple:
    """(files from the cache, files) from the migrate summary line."""
    found = re.search(r"; (\d+) of (\d+) files from the cache", done.stdout)
    assert found, done.stdout
    return int(found.group(1)), int(found.group(2))


def cold(tmp_path: Path, root: Path, *flags) -> dict:
    return migrated(tmp_path, root, "--no-cache", *flags, name=f"cold-{time.monotonic_ns()}")[0]


def test_a_warm_run_reuses_every_file_and_gives_the_cold_tree(tmp_path, project):
    cache = tmp_path / "cache"
    first, done = migrated(tmp_path, project, "--cache-dir", cache, name="first")
    assert reused(done) == (0, 30)
    second, done = migrated(tmp_path, project, "--cache-dir", cache, name="second")
    assert reused(done) == (30, 30)
    assert second == first == cold(tmp_path, project)
    assert b"torch.npu.synchronize()" in second["train.py"]  # the migration did happen
    assert "report.html" in {Path(p).name for p in second}


def test_a_changed_file_alone_is_processed_again(tmp_path, project):
    cache = tmp_path / "cache"
    migrated(tmp_path, project, "--cache-dir", cache, name="first")
    write(project / "layers" / "layer3.py", layer(3) + "\n\ndef sync():\n    torch.cuda.synchronize()\n")
    warm, done = migrated(tmp_path, project, "--cache-dir", cache, name="second")
    assert reused(done) == (29, 30)
    assert warm == cold(tmp_path, project)
    assert b"torch.npu.synchronize()" in warm["layers/layer3.py"]


def test_a_deleted_file_leaves_no_trace(tmp_path, project):
    cache = tmp_path / "cache"
    migrated(tmp_path, project, "--cache-dir", cache, name="first")
    (project / "layers" / "layer5.py").unlink()
    warm, done = migrated(tmp_path, project, "--cache-dir", cache, name="second")
    assert reused(done) == (29, 29)
    assert "layers/layer5.py" not in warm
    assert warm == cold(tmp_path, project)


def test_a_changed_rule_file_or_version_is_a_new_result(tmp_path, project):
    cache = tmp_path / "cache"
    rules = write(
        tmp_path / "mine.yaml",
        "rules:\n  FuncNameModifyRule:\n"
        "    - {id: mine, old_name: torch.cuda.synchronize, new_name: torch.npu.current_stream}\n",
    )
    migrated(tmp_path, project, "--cache-dir", cache, "-r", rules, "-v", "2.1.0", name="first")
    write(rules, rules.read_text().replace("current_stream", "synchronize"))
    warm, done = migrated(tmp_path, project, "--cache-dir", cache, "-r", rules, "-v", "2.1.0", name="rule")
    assert reused(done) == (0, 30)
    assert warm == cold(tmp_path, project, "-r", rules, "-v", "2.1.0")
    assert b"torch.npu.synchronize()" in warm["train.py"]
    warm, done = migrated(tmp_path, project, "--cache-dir", cache, "-r", rules, "-v", "2.8.0", name="version")
    assert reused(done) == (0, 30)
    assert warm == cold(tmp_path, project, "-r", rules, "-v", "2.8.0")


def test_another_tool_version_reuses_nothing(tmp_path, project, monkeypatch):
    cache = tmp_path / "cache"
    runner = CliRunner()

    def run(name: str) -> str:
        done = runner.invoke(
            main, ["migrate", "-i", str(project), "-o", str(tmp_path / name), "--cache-dir", str(cache)]
        )
        assert done.exit_code == 0, done.output
        return done.output

    assert "; 0 of 30 files from the cache" in run("first")
    assert "; 30 of 30 files from the cache" in run("second")
    monkeypatch.setattr("gpu2npu.__version__", "99.0.0")
    assert "; 0 of 30 files from the cache" in run("third")
    assert tree_files(tmp_path / "third") == tree_files(tmp_path / "first")


def test_the_tool_fingerprint_follows_the_version_and_the_code(monkeypatch):
    before = result_cache.tool_fingerprint()
    monkeypatch.setattr("gpu2npu.__version__", "99.0.0")
    assert result_cache.tool_fingerprint() != before


def test_a_corrupt_cache_is_a_warning_and_the_cold_result(tmp_path, project):
    cache = tmp_path / "cache"
    migrated(tmp_path, project, "--cache-dir", cache, name="first")
    entries = sorted(p for p in (cache / "entries").rglob("*") if p.is_file())
    entries[0].write_bytes(b"not an entry")
    entries[1].write_bytes(entries[1].read_bytes()[:-5])  # cut short
    data = bytearray(entries[2].read_bytes())
    data[-1] ^= 0xFF  # one bit pattern changed: the digest no longer matches
    entries[2].write_bytes(bytes(data))
    warm, done = migrated(tmp_path, project, "--cache-dir", cache, name="second")
    assert warm == cold(tmp_path, project)
    warning = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warning == [
        f"gpu2npu: warning: 3 entries of the cache '{cache}' could not be read and were ignored "
        "(those files were processed again); nothing to do; --no-cache skips the cache"
    ]
    _, done = migrated(tmp_path, project, "--cache-dir", cache, name="third")
    assert reused(done) == (30, 30) and "warning" not in done.stderr  # the entries were written again


def test_two_concurrent_runs_give_the_cold_result(tmp_path, project):
    cache = tmp_path / "cache"
    runs = [
        subprocess.Popen(
            gpu2npu_command()
            + ["migrate", "-i", str(project), "-o", str(tmp_path / f"run{n}"), "-j", "2"]
            + ["--cache-dir", str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        for n in range(2)
    ]
    for process in runs:
        assert process.wait(timeout=300) == 0, process.stderr.read()
    expected = cold(tmp_path, project)
    assert tree_files(tmp_path / "run0" / "proj_msft") == expected
    assert tree_files(tmp_path / "run1" / "proj_msft") == expected
    warm, done = migrated(tmp_path, project, "--cache-dir", cache, name="after")
    assert reused(done) == (30, 30) and warm == expected
    leftovers = [p for p in (cache / "entries").rglob(".tmp-*")]
    assert leftovers == []


def test_check_and_analyse_warm_equal_cold(tmp_path, project):
    env = dict(os.environ, GPU2NPU_CACHE_DIR=str(tmp_path / "cache"))
    outputs = []
    for flags in [(), (), ("--no-cache",)]:
        done = run_cli(
            "check", project, "--format", "json", "--fail-on", "any", "-v", "2.1.0", *flags, env=env
        )
        assert done.returncode == 1, done.stderr
        outputs.append(done.stdout)
    plain = run_cli("check", project, "--format", "json", "-v", "2.1.0", "--no-cache")
    assert outputs[0] == outputs[1] == outputs[2]
    assert json.loads(plain.stdout)["findings"]
    trees = []
    for n, flags in enumerate([(), (), ("--no-cache",)]):
        out = tmp_path / f"analysis{n}"
        done = run_cli(
            "analyse", "-i", project, "-o", out, "-m", "torch_apis", "-v", "2.1.0", *flags, env=env
        )
        assert done.returncode == 0, done.stderr
        trees.append(tree_files(out))
    assert trees[0] == trees[1] == trees[2] and trees[0]
    entries = [p for p in (tmp_path / "cache" / "entries").rglob("*") if p.is_file()]
    assert entries  # the check and the analysis wrote entries of their own


def test_a_cache_folder_that_cannot_be_written_is_a_warning(tmp_path, project):
    blocked = write(tmp_path / "a-file", "not a folder")
    tree, done = migrated(tmp_path, project, "--cache-dir", blocked, name="first")
    assert tree == cold(tmp_path, project)
    assert [line for line in done.stderr.splitlines() if "warning" in line] == [
        f"gpu2npu: warning: the cache folder '{blocked}' cannot be written (Not a directory); running "
        "without the cache; choose another folder with --cache-dir, or --no-cache"
    ]
    assert "files from the cache" not in done.stdout


def test_no_cache_reads_and_writes_nothing(tmp_path, project):
    env = dict(os.environ, GPU2NPU_CACHE_DIR=str(tmp_path / "cache"))
    done = run_cli("migrate", "-i", project, "-o", tmp_path / "out", "--no-cache", env=env)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "cache").exists()
    done = run_cli("check", project, "--no-cache", "--cache-dir", tmp_path / "c")
    assert done.returncode == 2
    assert "--no-cache and --cache-dir contradict each other" in done.stderr


def test_the_default_folder_is_the_environment_s_or_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU2NPU_CACHE_DIR", str(tmp_path / "mine"))
    assert result_cache.default_directory() == tmp_path / "mine"
    monkeypatch.delenv("GPU2NPU_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert result_cache.default_directory() == tmp_path / "xdg" / "gpu2npu"


def test_a_cache_folder_inside_the_project_is_not_migrated(tmp_path, project):
    cache = project / ".gpu2npu_cache"
    tree, done = migrated(tmp_path, project, "--cache-dir", cache, name="first")
    assert reused(done) == (0, 30)
    assert not any(path.startswith(".gpu2npu_cache") for path in tree)
    tree, done = migrated(tmp_path, project, "--cache-dir", cache, name="second")
    assert reused(done) == (30, 30)


def test_the_folder_is_trimmed_oldest_used_first(tmp_path):
    cache, _ = result_cache.open_cache(tmp_path / "c", "run")
    keys = [cache.key(f"f{n}.py", "python", b"x", ()) for n in range(10)]
    for age, key in enumerate(keys):
        cache.store(key, b"y" * 1000)
        path = cache._path(key)
        os.utime(path, (1000 + age, 1000 + age))
    assert cache.load(keys[0])[0] == result_cache.HIT  # used now: the newest
    size = cache._path(keys[0]).stat().st_size
    removed = result_cache.trim(tmp_path / "c", limit=size * 5)
    left = [key for key in keys if cache._path(key).exists()]
    assert removed == 6 and left == [keys[0]] + keys[7:]
    assert result_cache.trim(tmp_path / "c", limit=size * 5) == 0
