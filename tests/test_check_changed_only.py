"""check --changed-only REF: only the files changed since a git ref are checked (commits since
it, staged and unstaged edits, new files git does not ignore); bad refs and trees outside git
get one line and exit 2."""

import json
import shutil
import subprocess

import pytest
from helpers import run_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
CUDA = "import torch\nx = torch.zeros(1).cuda()\n"


def git(repo, *arguments):
    command = ["git", "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", *arguments]
    subprocess.run(command, cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    """A clone with a commit of three CUDA files, then: one edited and committed, one edited
    and not staged, one new and untracked, one new and ignored, one deleted."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    for name in ("same.py", "committed.py", "pkg/edited.py", "gone.py"):
        (root / name).write_text(CUDA)
    (root / ".gitignore").write_text("ignored.py\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    git(root, "tag", "base")
    (root / "committed.py").write_text(CUDA + "y = torch.ones(1).cuda()\n")
    git(root, "commit", "-qam", "edit")
    (root / "pkg" / "edited.py").write_text(CUDA + "torch.cuda.synchronize()\n")
    (root / "pkg" / "new file.py").write_text(CUDA)
    (root / "ignored.py").write_text(CUDA)
    (root / "gone.py").unlink()
    return root


def checked_files(result):
    return sorted({finding["file"] for finding in json.loads(result.stdout)["findings"]})


def test_only_the_files_changed_since_the_ref_are_checked(repo):
    result = run_cli("check", "--fail-on", "any", "--format", "json", "--changed-only", "base", ".", cwd=repo)
    assert result.returncode == 1, result.stderr
    assert checked_files(result) == ["committed.py", "pkg/edited.py", "pkg/new file.py"]
    whole = run_cli("check", "--fail-on", "any", "--format", "json", ".", cwd=repo)
    assert checked_files(whole) == [
        "committed.py",
        "ignored.py",
        "pkg/edited.py",
        "pkg/new file.py",
        "same.py",
    ]


def test_a_subfolder_is_checked_for_its_own_changes(repo):
    result = run_cli(
        "check", "--fail-on", "any", "--format", "json", "--changed-only", "HEAD", "pkg", cwd=repo
    )
    assert result.returncode == 1, result.stderr
    assert checked_files(result) == ["pkg/edited.py", "pkg/new file.py"]


def test_nothing_changed_passes(repo):
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "all")
    result = run_cli("check", "--fail-on", "any", "--changed-only", "HEAD", ".", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("0 finding(s)")


@pytest.mark.parametrize(
    "ref,where,message",
    [
        (
            "nosuch",
            "repo",
            "gpu2npu: error: git knows no commit 'nosuch'; fetch it (git fetch origin main) or name another "
            "ref",
        ),
        (
            "--all",
            "repo",
            "gpu2npu: error: '--all' is not a git ref; name a branch, tag or commit, e.g. origin/main",
        ),
        (
            "HEAD",
            "outside",
            "gpu2npu: error: '{outside}' is not in a git work tree; run check --changed-only in a clone",
        ),
    ],
)
def test_a_ref_or_a_tree_git_cannot_answer_for_is_one_line_and_exit_2(repo, tmp_path, ref, where, message):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.py").write_text(CUDA)
    path = repo if where == "repo" else outside
    result = run_cli("check", f"--changed-only={ref}", path)
    assert result.returncode == 2
    assert result.stderr.strip() == message.format(outside=outside)
