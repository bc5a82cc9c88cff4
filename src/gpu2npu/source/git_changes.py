"""``check --changed-only REF``: the files of a tree that changed since a git ref (committed,
staged, not staged, or new and not ignored), so that a pull request's gate reads only those."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import FrozenSet, List, Optional, Tuple

from gpu2npu.errors import UserError


def changed_since(root: Path, ref: str) -> FrozenSet[str]:
    """Paths relative to ``root`` (a folder in a git work tree) of the files changed since ``ref``
    that still exist; a deleted file has nothing to check."""
    if shutil.which("git") is None:
        raise UserError(
            "--changed-only needs git, which is not installed", "install git, or check the whole tree"
        )
    if ref.startswith("-"):
        raise UserError(f"'{ref}' is not a git ref", "name a branch, tag or commit, e.g. origin/main")
    not_a_clone = (f"'{root}' is not in a git work tree", "run check --changed-only in a clone")
    if _git(root, ["rev-parse", "--is-inside-work-tree"], not_a_clone).strip() != b"true":
        raise UserError(*not_a_clone)
    unknown = (f"git knows no commit '{ref}'", "fetch it (git fetch origin main) or name another ref")
    _git(root, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], unknown)
    changed = _git(root, ["diff", "--name-only", "-z", "--relative", "--diff-filter=d", ref, "--"])
    new = _git(root, ["ls-files", "--others", "--exclude-standard", "-z"])
    return frozenset(_names(changed) + _names(new))


def _git(root: Path, arguments: List[str], problem: Optional[Tuple[str, str]] = None) -> bytes:
    """git's output; its failure as one line for the user (``problem``, or what git said)."""
    run = subprocess.run(["git", "-C", str(root), *arguments], capture_output=True)
    if run.returncode == 0:
        return run.stdout
    if problem is not None:
        raise UserError(*problem)
    said = os.fsdecode(run.stderr).strip().splitlines()
    raise UserError(f"git could not list the changes in '{root}': {said[-1] if said else 'it failed'}")


def _names(output: bytes) -> List[str]:
    return [os.fsdecode(name) for name in output.split(b"\0") if name]
