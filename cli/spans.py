"""Spans of a regular file: what ``--jobs`` workers read themselves.

Once workers run on a regular file, the main process no longer reads it: each worker reads
the lines that start in its span with os.pread (which moves no shared file offset).  Copying
every block through this process (a read, the line count, a write into a pipe) was about
half of its work: on 2 cores, CPU taken from the workers (bench/cli.py --scaling).
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from typing import IO

from .blocks import Block
from .inputs import BlockReader

_SPAN_READ = 64 * 1024  # bytes read at a time past a span's end, to finish its last line
_MIN_SPAN = 64 * 1024  # about 1,000 lines: the smallest span worth a trip to a worker


def file_spans(reader: BlockReader, size: int) -> Iterator[Block] | None:
    """The rest of ``reader``'s input as spans of up to ``size`` bytes, then (if the file grew
    meanwhile) as blocks of that size read from where the spans ended; None when the input is
    not a plain file that can be read that way (a pipe, gzip, the middle of an over-long line)."""
    fd = regular_file(reader.stream)
    if fd is None or reader.per_line or reader.skipping or reader.parts:
        return None
    try:
        start = reader.stream.tell() - len(reader.held)
    except (OSError, ValueError):
        return None
    return _spans(reader, fd, start, size) if start > 0 else None


def regular_file(stream: IO[bytes]) -> int | None:
    """The descriptor of the regular file ``stream`` reads as it is (not gzip), or None."""
    # Exactly a buffered file: a reader over a GzipFile has the compressed file's fileno() too.
    if type(stream) is not io.BufferedReader or not isinstance(stream.raw, io.FileIO):
        return None
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, ValueError):
        return None


def _spans(reader: BlockReader, fd: int, start: int, most: int) -> Iterator[Block]:
    size = os.fstat(fd).st_size
    while start < size:
        # Smaller near the end (a quarter of what is left), so that the workers finish at
        # about the same time: the last span is one worker's alone.
        end = min(start + min(most, max((size - start) // 4, _MIN_SPAN)), size)
        yield Block(b"", 0, span=(fd, start, end))
        reader.stream.seek(end)  # for the progress report: how far the input has gone
        start = end
    # Lines written to the file while the spans were read: read on, as one process would.
    reader.stream.seek(line_start(fd, start, reader.sep))
    rest = BlockReader(reader.stream, reader.sep, reader.max_bytes, most)
    rest.numbered = False
    yield from rest


def line_start(fd: int, offset: int, sep: bytes) -> int:
    """Where the first line that starts at or after ``offset`` starts (the end of the file
    when none does)."""
    at = offset - 1
    while chunk := os.pread(fd, _SPAN_READ, at):
        cut = chunk.find(sep)
        if cut >= 0:
            return at + cut + 1
        at += len(chunk)
    return max(at, offset)


def read_span(fd: int, start: int, end: int, sep: bytes, max_bytes: int) -> bytes:
    """The lines of file ``fd`` that start in ``[start, end)``, each ending with ``sep``: the
    last one read on past ``end`` to its end, a line too long kept as ``max_bytes + 1`` bytes
    (as `BlockReader` keeps it)."""
    head = os.pread(fd, end - start + 1, start - 1)
    cut = head.find(sep)  # the line before ends here (at 0 when the span starts a line)
    if cut < 0 or cut == len(head) - 1:
        return b""  # the line that covers the span starts before it
    data = [head[cut + 1 :]]
    last = len(data[0]) - data[0].rfind(sep) - 1  # bytes of the last line read so far
    at = start - 1 + len(head)
    while last and last <= max_bytes and (chunk := os.pread(fd, _SPAN_READ, at)):
        cut = chunk.find(sep)
        data.append(chunk if cut < 0 else chunk[: cut + 1])
        last = 0 if cut >= 0 else last + len(chunk)
        at += len(chunk)
    joined = b"".join(data)
    if last > max_bytes:  # cut as BlockReader cuts it: enough to call it too long
        joined = joined[: len(joined) - last + max_bytes + 1]
    return joined if joined.endswith(sep) else joined + sep
