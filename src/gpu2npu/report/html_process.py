"""report.html rendered in a process of its own, started when the migration starts: it imports
pandas and Jinja2 while the files are migrated (on another core), and the migrating process
never holds them (pandas alone was a third of its peak memory on a large repository).

The parent sends one message on the child's stdin, a line with the byte count and then the JSON
``{"directory": ..., "page": page_input(...)}``; a parent that stops early kills the child."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Optional

from gpu2npu.report.html import HTML_FILE, write_html


class PageProcess:
    """The child that renders report.html, or, where no child can be started, rendering here."""

    def __init__(self) -> None:
        self._child: Optional[subprocess.Popen] = None
        try:
            self._child = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except OSError:  # no interpreter to start (an embedded Python): render in this process
            self._child = None

    def __enter__(self) -> "PageProcess":
        return self

    def __exit__(self, *exc) -> None:
        if self._child is not None and self._child.returncode is None:
            self._child.kill()
            self._child.wait()

    def render(self, directory: Path, page: dict) -> None:
        if self._child is None:
            write_html(directory, page)
            return
        message = json.dumps({"directory": str(directory), "page": page}).encode("utf-8")
        _, errors = self._child.communicate(b"%d\n" % len(message) + message)
        if self._child.returncode != 0:
            last = (errors.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"rendering {HTML_FILE}: {last}")  # a bug: the CLI says so


def _serve() -> int:
    import jinja2  # noqa: F401  (imported now, while the parent migrates)
    import pandas  # noqa: F401

    header = sys.stdin.buffer.readline()
    if not header:  # the parent stopped before its reports
        return 0
    message = json.loads(sys.stdin.buffer.read(int(header)))
    write_html(Path(message["directory"]), message["page"])
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
