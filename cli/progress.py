"""The progress bar of a long run (``urlsan canon``, ``urlsan audit``) on a terminal, and the
size of the input it measures against."""

from __future__ import annotations

import gzip
import io
import os
import time
from collections.abc import Callable
from typing import IO, Any


class Progress:
    """A one-line progress report on a terminal, at most ten updates a second.

    It appears only after the first second: a large input is one that takes a while.
    """

    def __init__(
        self,
        stream: IO[str],
        size: int | None,
        position: Callable[[], int] | None,
        enabled: bool,
    ) -> None:
        self.stream = stream
        self.size = size
        self.position = position
        self.enabled = enabled
        self.start = time.monotonic()
        self.next = self.start + 1.0
        self.shown = False

    def update(self, lines: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + 0.1
        rate = lines / max(now - self.start, 1e-9)
        text = f"{lines:>12,} lines  {rate:>9,.0f} lines/s"
        if self.size and self.position is not None:
            try:
                done = min(self.position() / self.size, 1.0)
            except (OSError, ValueError):
                done = 0.0
            bar = "#" * int(done * 30)
            text = f"[{bar:<30}] {done:>4.0%} {text}"
        self.stream.write(f"\r{text}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def input_size(stream: IO[bytes]) -> tuple[int | None, Callable[[], int] | None]:
    """The size of the file under ``stream`` and a way to ask how far it has been read."""
    base: Any = stream
    if isinstance(base, gzip.GzipFile):
        base = base.fileobj  # progress in compressed bytes: the only size known in advance
    try:
        size = os.fstat(base.fileno()).st_size
        base.tell()
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None, None
    if size <= 0:
        return None, None
    return size, base.tell
