"""The output tree is built in a temporary sibling folder and renamed into place at the end,
so an interrupted run never leaves a half-written tree where the result belongs."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

from gpu2npu.errors import output_error
from gpu2npu.project.plan import COPY, DIRECTORY, LINK, Plan


class AtomicTree:
    def __init__(self, final: Path, replace: bool):
        self.final = final
        self.replace = replace
        self.created = _missing_folders(final.parent)  # removed again if the run fails
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            self.temp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        except OSError:
            self._remove_created()
            raise

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
                where = _as_the_user_knows_it(str(exc.filename2 or exc.filename or final), final)
                raise output_error(where, exc) from exc
            raise

    def path(self, rel: str) -> Path:
        return self.temp / rel

    @staticmethod
    def temporary_prefix(final: Path) -> str:
        return str(final.parent / f".{final.name}.")

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
        self._remove_created()

    def _remove_created(self) -> None:
        for folder in reversed(self.created):  # deepest first; one that holds anything else stays
            try:
                folder.rmdir()
            except OSError:
                break


def _missing_folders(folder: Path) -> List[Path]:
    """``folder`` and its ancestors that do not exist yet, outermost first."""
    missing = []
    while not (folder.exists() or folder.is_symlink()) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def _as_the_user_knows_it(where: str, final: Path) -> str:
    """A path in the temporary tree (or the temporary tree itself) as its final path: the name
    the user gave and will look for, not a random one that no longer exists."""
    prefix = AtomicTree.temporary_prefix(final)
    if not where.startswith(prefix):
        return where
    temp_name, _, rest = where[len(prefix) :].partition(os.sep)
    return str(final / rest) if rest else str(final) if temp_name.endswith(".tmp") else where


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


def write_atomically(path: Path, data: bytes) -> None:
    """Write beside ``path``, then rename over it: a full disk or an interruption leaves the old
    file or none, never half of a new one. An OSError is the caller's to word."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def make_link(target: str, destination: Path) -> None:
    os.symlink(target, destination)


def make_directories(plan: Plan, tree: AtomicTree) -> None:
    """The input's folders, with their permission bits, in the new tree."""
    shutil.copymode(plan.root, tree.temp)  # the temporary folder was created private
    for entry in plan.of_kind(DIRECTORY):
        target = tree.path(entry.rel)
        target.mkdir()
        shutil.copymode(plan.root / entry.rel, target)


def copy_other_entries(plan: Plan, tree: AtomicTree, every_kind: bool = False) -> Tuple[int, int]:
    """Links and the files no file kind migrates (``every_kind``: all but Python), as they
    are; returns (files copied, links made). A file that cannot be read is noted in the plan
    for the report."""
    copied = links = 0
    for entry in plan.entries:
        target = tree.path(entry.rel)
        if entry.kind == LINK:
            make_link(entry.link_target, target)
            links += 1
        elif entry.kind == COPY and (every_kind or entry.file_kind is None):
            source = plan.root / entry.rel
            try:
                copy_file(source, target)
                copied += 1
            except OSError as exc:
                if exc.filename != str(source) or exc.filename2 is not None:
                    raise  # the output's fault (a copy that failed half-way names both files)
                plan.notes.append((entry.rel, f"cannot be read ({exc.strerror}); not copied"))
    return copied, links
