"""Where a command writes (``urlsan canon``, ``urlsan audit``): a file (gzipped when its name
ends in .gz) or standard output, and the `Output` that turns a failed write into `OutputError`."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
from typing import IO, Any, cast

from .status import OutputError, UsageError


def open_output(path: str) -> IO[bytes]:
    """A binary stream to ``path`` (``-``: standard output), gzipped when the name ends in .gz."""
    if path == "-":
        return sys.stdout.buffer
    if path.endswith(".gz"):
        gz: Any = gzip.open(path, "wb", compresslevel=6)  # noqa: SIM115
        return cast(IO[bytes], gz)
    return open(path, "wb", buffering=1 << 16)


class Output:
    """The output stream: a failed write (disk full) becomes `OutputError`, not a traceback; a
    broken pipe stays itself (``| head``: main ends quietly, with status 141)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.shown = "standard output" if path == "-" else path
        self.to_stdout = path == "-"
        try:
            self.stream = open_output(path)
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror or e}") from None

    def write(self, data: bytes) -> None:
        if data:
            self._do(self.stream.write, data)

    def flush(self) -> None:
        self._do(self.stream.flush)

    def close(self) -> None:
        self._do(self.stream.flush if self.to_stdout else self.stream.close)

    def _do(self, action: Any, *data: bytes) -> None:
        try:
            action(*data)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise OutputError(e.strerror or str(e)) from None

    def abandon(self) -> None:
        """Give up on the output without a second error: what is still buffered is dropped
        (for standard output, at exit too: fd 1 then points to /dev/null)."""
        if self.to_stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.stream.fileno())
            except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
                pass
            finally:
                os.close(devnull)
            return
        with contextlib.suppress(OSError):
            self.stream.close()
