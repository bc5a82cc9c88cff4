"""Checking a run's input and output before anything is read or written."""

from __future__ import annotations

import os
from pathlib import Path

from gpu2npu.errors import UserError, output_error
from gpu2npu.filekinds import migrates_file
from gpu2npu.options import OutputOptions


def output_name(input_path: Path, suffix: str) -> str:
    """``proj`` -> ``proj<suffix>``; a single file ``train.py`` -> ``train<suffix>``."""
    base = input_path.stem if input_path.is_file() else input_path.resolve().name
    return base + suffix


def check_input(source: Path) -> None:
    if not source.exists():
        raise UserError(f"input '{source}' does not exist", "pass an existing directory or .py file with -i")
    if source.is_file() and not migrates_file(source):
        raise UserError(
            f"input '{source}' is neither a directory nor a file gpu2npu migrates",
            "pass a directory, or a Python file, notebook, shell script, Dockerfile, config "
            "or requirements file",
        )
    if not _readable(source):
        raise UserError(f"input '{source}' cannot be read", "check its permissions")


def destination(source: Path, output: OutputOptions, suffix: str, writes: bool = True) -> Path:
    """Validate input and output; return the output project directory ``output/<name><suffix>``.
    ``writes`` False: nothing will be written (``--diff``), so an existing output is fine."""
    check_input(source)
    try:
        return _destination(source, output, suffix, writes)
    except OSError as exc:  # a name too long, a loop of links in the output path, ...
        raise output_error(exc.filename or output.directory, exc) from exc


def _destination(source: Path, output: OutputOptions, suffix: str, writes: bool) -> Path:
    if output.directory.exists() and not output.directory.is_dir():
        raise UserError(
            f"output '{output.directory}' is not a directory", "pass a directory (it is created if missing)"
        )
    root = (source.parent if source.is_file() else source).resolve()
    directory = output.directory.resolve()
    if source.is_dir() and _inside(directory, root):
        raise UserError(
            f"output '{output.directory}' is inside the input '{source}'",
            "choose an output outside the input",
        )
    target = directory / output_name(source, suffix)
    if _inside(root, target):
        raise UserError(
            f"input '{source}' is inside the output '{target}'", "choose another output directory"
        )
    if (target.exists() or target.is_symlink()) and writes and not output.force:
        raise UserError(f"output '{target}' already exists", "pass --force to replace it")
    if output.patch is not None:
        _check_patch(output.patch, source, root, target)
    return target


def _check_patch(patch: Path, source: Path, root: Path, target: Path) -> None:
    """A patch file is written beside the input, never into it or into the tree it describes."""
    where = patch.resolve()
    if source.is_dir() and _inside(where, root) or where == source.resolve():
        raise UserError(
            f"patch '{patch}' is inside the input '{source}'", "write the patch outside the input"
        )
    if _inside(where, target):
        raise UserError(
            f"patch '{patch}' is inside the output '{target}'", "write the patch outside the output"
        )
    if patch.is_dir():
        raise UserError(f"patch '{patch}' is a directory", "name a file to write with --patch")
    if patch.exists() and not patch.is_file():
        raise UserError(f"patch '{patch}' is not a regular file", "name a file to write with --patch")
    if not where.parent.is_dir():
        raise UserError(f"the folder of patch '{patch}' does not exist", "create it, or name another file")


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0))
