"""One style for the whole tree: ruff's lint and format, as configured in pyproject.toml."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ruff(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True)


def test_ruff_lint_passes():
    run = ruff("check", "--no-cache", ".")
    assert run.returncode == 0, run.stdout + run.stderr


def test_ruff_format_changes_nothing():
    run = ruff("format", "--no-cache", "--check", ".")
    assert run.returncode == 0, run.stdout + run.stderr
