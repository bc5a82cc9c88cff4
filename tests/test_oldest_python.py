"""The oldest Python pyproject.toml accepts runs the installed command as the test Python does:
the bundled example migrated under both gives the same tree and the same reports, byte for
byte (Python 3.9's ast has no match-statement nodes: a rewrite reaching for one failed every
file there)."""

import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

OLDEST = re.search(r'requires-python = ">=(\d+\.\d+)"', (REPO / "pyproject.toml").read_text()).group(1)
EXAMPLE = REPO / "examples" / "cifar_resnet"


def _oldest_python():
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == OLDEST:
        pytest.skip(f"the tests run on Python {OLDEST} already")
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which(f"python{OLDEST}"), *sorted(pyenv.glob(f"{OLDEST}.*/bin/python{OLDEST}"))]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True
        )
        if probe.returncode == 0 and probe.stdout.decode().strip() == str(tuple(map(int, OLDEST.split(".")))):
            return candidate
    pytest.skip(f"no working python{OLDEST} found: the command is not tried on the oldest Python accepted")


def _migrate(command, out):
    result = subprocess.run(
        [*command, "migrate", "-i", EXAMPLE, "-o", out, "-v", "2.1.0", "--no-cache", "-j", "1"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return out / "cifar_resnet_msft"


def _different(left, right):
    """Files that differ or exist on one side only, report.html aside (it states the run's time)."""
    compared = filecmp.dircmp(left, right, ignore=["report.html"])
    found, pending = [], [compared]
    while pending:
        here = pending.pop()
        found += here.left_only + here.right_only + here.diff_files + here.funny_files
        pending += here.subdirs.values()
    return found


def test_the_oldest_python_accepted_migrates_the_example_as_this_one_does(tmp_path):
    python = _oldest_python()
    env_dir = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", env_dir], check=True)
    installed = subprocess.run(
        [env_dir / "bin" / "python", "-m", "pip", "install", "-q", REPO], capture_output=True, text=True
    )
    if installed.returncode != 0:
        pytest.skip(f"gpu2npu could not be installed for Python {OLDEST}: {installed.stderr.strip()[-300:]}")
    oldest = _migrate([env_dir / "bin" / "gpu2npu"], tmp_path / "oldest")
    current = _migrate([sys.executable, "-m", "gpu2npu"], tmp_path / "current")
    assert _different(oldest, current) == []
    skipped = (oldest / "transplant_result_file" / "skipped_files.csv").read_text()
    assert "internal error" not in skipped
    assert (oldest / "train.py").read_bytes() != (EXAMPLE / "train.py").read_bytes()
