"""Reading a small input file (a rule file, a baseline) that may be anything: a FIFO would
block the open, /dev/zero never ends, a huge file would fill the memory. Only a regular file is
read, and at most ``limit`` bytes of it."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegularFile(OSError):
    """``kind`` says what it is instead (a directory, a FIFO, ...)."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


class FileTooLarge(OSError):
    pass


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of ``path``; NotRegularFile, FileTooLarge, or the OSError of the open or read."""
    _check_regular(os.stat(path).st_mode)
    # O_NONBLOCK: a FIFO put there after the stat returns at once instead of waiting for a writer.
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(descriptor, "rb") as stream:
        status = os.fstat(stream.fileno())
        _check_regular(status.st_mode)  # it may have been swapped since the stat
        if status.st_size > limit:
            raise FileTooLarge(path)
        data = stream.read(limit + 1)  # a file growing while it is read is still caught
    if len(data) > limit:
        raise FileTooLarge(path)
    return data


def _check_regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFile(_file_kind(mode))


def _file_kind(mode: int) -> str:
    kinds_by_test = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((kind for test, kind in kinds_by_test if test(mode)), "a special file")
