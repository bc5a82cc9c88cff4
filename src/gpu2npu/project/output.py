"""The output tree is built in a temporary sibling folder and renamed into place at the end,
so an interrupted run never leaves a half-written tree where the result belongs."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Tuple

from gpu2npu.errors import output_error
from gpu2npu.project.plan import COPY, DIRECTORY, LINK, Plan


class AtomicTree:
    def __init__(self, final: Path, replace: bool):
        self.final = final
        self.replace = replace
        final.parent.mkdir(parents=True, exist_ok=True)
        self.temp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))

    @classmethod
    @contextmanager
    def building(cls, final: Path, replace: bool) -> Iterator["AtomicTree"]:
        """A tree to fill in the ``with`` block, put in place when the block ends; on any error
        the temporary tree is removed, the old tree stays, and an OS error on the output
        becomes one line for the user (output_error)."""
        tree = None
        try:
            tree = cls(final, replace)
            yield tree
            tree.commit()
        except BaseException as exc:
            if tree is not None:
                tree.discard()
            if isinstance(exc, OSError):
                where = str(exc.filename2 or exc.filename or final)
                if tree is not None and where.startswith(str(tree.temp)):
                    where = str(final) + where[len(str(tree.temp)) :]  # as the user will look for it
                raise output_error(where, exc) from exc
            raise

    def path(self, rel: str) -> Path:
        return self.temp / rel

    def commit(self) -> None:
        """Put the finished tree in place (replacing the old one only now, if asked to)."""
        old = None
        if self.final.exists() or self.final.is_symlink():
            old = self.final.parent / f".{self.final.name}.old-{os.getpid()}"
            os.rename(self.final, old)
        try:
            os.rename(self.temp, self.final)
        except OSError:
            if old is not None:
                os.rename(old, self.final)  # the old tree back where it was
            raise
        if old is not None:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()

    def discard(self) -> None:
        shutil.rmtree(self.temp, ignore_errors=True)


def copy_file(source: Path, destination: Path) -> None:
    """Byte-for-byte copy that keeps the permission bits."""
    write_file(source, destination, None)


def write_file(source: Path, destination: Path, new_bytes: Optional[bytes]) -> None:
    """``new_bytes`` in place of ``source`` (None: the source byte for byte), with its permission bits."""
    if new_bytes is None:
        shutil.copyfile(source, destination)
    else:
        destination.write_bytes(new_bytes)
    shutil.copymode(source, destination)


def make_link(target: str, destination: Path) -> None:
    os.symlink(target, destination)


def make_directories(plan: Plan, tree: AtomicTree) -> None:
    """The input's folders, with their permission bits, in the new tree."""
    shutil.copymode(plan.root, tree.temp)  # the temporary folder was created private
    for entry in plan.of_kind(DIRECTORY):
        target = tree.path(entry.rel)
        target.mkdir()
        shutil.copymode(plan.root / entry.rel, target)


def copy_other_entries(plan: Plan, tree: AtomicTree) -> Tuple[int, int]:
    """Links and non-Python files, as they are; returns (files copied, links made). A file
    that cannot be read is noted in the plan for the report."""
    copied = links = 0
    for entry in plan.entries:
        target = tree.path(entry.rel)
        if entry.kind == LINK:
            make_link(entry.link_target, target)
            links += 1
        elif entry.kind == COPY:
            source = plan.root / entry.rel
            try:
                copy_file(source, target)
                copied += 1
            except OSError as exc:
                if exc.filename != str(source) or exc.filename2 is not None:
                    raise  # the output's fault (a copy that failed half-way names both files)
                plan.notes.append((entry.rel, f"cannot be read ({exc.strerror}); not copied"))
    return copied, links
