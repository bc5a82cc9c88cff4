"""``gpu2npu run``: run a command with the CPU stand-in for torch_npu importable (its folder first
on PYTHONPATH, which child processes inherit) and the number of NPUs to emulate; the command's
streams pass through and its exit code is ours."""

from __future__ import annotations

import os
import subprocess
from typing import Sequence

from gpu2npu.errors import UserError
from gpu2npu.standin import standin_environment


def exit_code(returncode: int) -> int:
    """A command killed by signal N exits as a shell reports it: 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def run_with_standin(command: Sequence[str], devices: int) -> int:
    if not command:
        raise UserError("gpu2npu run needs a command", "for example: gpu2npu run -- python train.py")
    try:
        process = subprocess.Popen(list(command), env=standin_environment(os.environ, devices))
    except FileNotFoundError:
        raise UserError(f"command not found: {command[0]}", "check the command after --") from None
    except PermissionError:
        raise UserError(f"cannot execute {command[0]}", "check the command after --") from None
    try:
        return exit_code(process.wait())
    except KeyboardInterrupt:  # the command got the same Ctrl-C: its exit code is still ours
        return exit_code(process.wait())
