"""The input of ``urlsan canon``: a file or standard input (gunzipped when it is gzip) read in
blocks of whole lines (`BlockReader`), or the command-line arguments as one block.

A block ends early when the input pauses (nothing more can be read without blocking): its lines
are written out at once, so ``tail -f log | urlsan canon`` shows each line as it comes, while
a file or a busy pipe is still read in large blocks.
"""

from __future__ import annotations

import gzip
import io
import select
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, cast

from .blocks import Block

# Longer lines are bad lines.  Servers refuse far less (nginx 8 KiB, Apache 8 KiB, IIS 16 KiB);
# browsers send up to 2 MB.  64 KiB keeps every real URL and bounds the memory one line may take.
MAX_LINE_BYTES = 64 * 1024
# About 2,000 real URLs: a block's output is written as soon as it is done, and the
# measurement that decides whether workers pay (`batch._workers_pay`) is taken over a few of them.
BLOCK_BYTES = 128 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


def open_input(path: str) -> IO[bytes]:
    """A binary stream of ``path`` (``-``: standard input), gunzipped when it starts like gzip."""
    raw: Any = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        from ..audit.sources import GzipInput  # here: plain input starts without audit's imports

        return cast(IO[bytes], GzipInput(buffered))
    return cast(IO[bytes], buffered)


def close_input(stream: IO[bytes] | None) -> None:
    """Close an input stream, never standard input."""
    if stream is not None and stream is not sys.stdin.buffer:
        stream.close()


def _more_at_once(stream: IO[bytes]) -> Callable[[], bool]:
    """A test of whether ``stream`` can give more input without blocking (always yes when that
    cannot be asked, as for a file in memory)."""
    base: Any = stream.fileobj if isinstance(stream, gzip.GzipFile) else stream
    try:
        poller = select.poll()
        poller.register(base.fileno(), select.POLLIN)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return lambda: True
    return lambda: bool(poller.poll(0))


class BlockReader:
    """The blocks of a stream of ``sep``-separated lines, numbered from 1.

    Each read takes what the stream has at once (`read1`), up to `BLOCK_BYTES`; a block is
    handed on when it is full, at the end, or when the input pauses.  With ``per_line`` every
    line is a block of its own (``--line-buffered``).  The last line needs no separator.
    """

    def __init__(
        self,
        stream: IO[bytes],
        sep: bytes = b"\n",
        max_bytes: int = MAX_LINE_BYTES,
        size: int = BLOCK_BYTES,
        per_line: bool = False,
    ) -> None:
        self.stream, self.sep, self.max_bytes = stream, sep, max_bytes
        self.size, self.per_line = size, per_line
        self.number = 1  # of the next line to hand on
        self.parts: list[bytes | memoryview] = []  # whole lines not handed on yet
        self.held = b""  # the start of a line whose end has not been read
        self.skipping = False  # in the middle of a line too long to keep
        self.numbered = True  # False: blocks say first=0, numbered when their results are back
        # Why a gzip input stopped early (cut short or corrupt), or None: the lines before the
        # cut are handed on, the one it goes through is not (the rest of it is unknown).
        self.cut: str | None = None

    def __iter__(self) -> Iterator[Block]:
        read: Callable[[int], bytes] = getattr(self.stream, "read1", self.stream.read)
        more = _more_at_once(self.stream)
        while data := self._read(read):
            self._take(data)
            pause = len(data) < self.size and not more()
            if pause or self.per_line or sum(map(len, self.parts)) >= self.size:
                yield from self._hand_on(pause=True if self.per_line else pause)
        if self.cut is not None:
            self.held, self.skipping = b"", False
        if self.held:
            self.parts.append(self.held + self.sep)
            self.held = b""
        yield from self._hand_on(pause=True)

    def _read(self, read: Callable[[int], bytes]) -> bytes:
        try:
            return read(self.size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            # GzipFile raises at a member without its end (RFC 1952 §2.2: no CRC32 and ISIZE), as
            # a copy cut short has, and at corrupt deflate data; what came before was sound.
            self.cut = f"the gzip data ends here, cut short or corrupt ({e})"
            return b""

    def _take(self, data: bytes) -> None:
        if self.skipping:  # the rest of a too-long line: dropped, never held
            cut = data.find(self.sep)
            if cut < 0:
                return
            data, self.skipping = data[cut + 1 :], False
        end = data.rfind(self.sep)
        if end >= 0:
            # Joined once, in _hand_on: a slice and a concatenation here would copy it twice.
            if self.held:
                self.parts.append(self.held)
            self.parts.append(data if end + 1 == len(data) else memoryview(data)[: end + 1])
            self.held = data[end + 1 :]
        else:
            self.held += data
        if len(self.held) > self.max_bytes:
            # Kept as max_bytes + 1 bytes: enough for the processor to call it too long.
            self.parts.append(self.held[: self.max_bytes + 1] + self.sep)
            self.held, self.skipping = b"", True

    def _hand_on(self, pause: bool) -> Iterator[Block]:
        if not self.parts:
            return
        data = b"".join(self.parts)
        self.parts = []
        if not self.per_line:
            if not self.numbered:
                yield Block(data, 0, pause)
                return
            yield Block(data, self.number, pause)
            self.number += data.count(self.sep)
            return
        for line in data.split(self.sep)[:-1]:
            yield Block(line + self.sep, self.number, True)
            self.number += 1


def arguments_block(urls: Iterable[str]) -> Block:
    """Command-line arguments as one block of lines (argument 1, 2, …)."""
    return Block(b"", 1, True, tuple(urls))
