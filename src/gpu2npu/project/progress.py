"""A progress line on a terminal, shown only once a run has lasted longer than a moment."""

from __future__ import annotations

import sys
import time

SHOW_AFTER = 0.5  # seconds
REFRESH = 0.1


class Progress:
    def __init__(self, total: int, enabled: bool, stream=sys.stderr):
        self.total = total
        self.enabled = enabled and total > 0
        self.stream = stream
        self.done = 0
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.shown = False

    def advance(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < SHOW_AFTER or now - self.drawn_at < REFRESH:
            return
        self.drawn_at = now
        self.shown = True
        width = 30
        filled = width * self.done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} files")
        self.stream.flush()

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()
