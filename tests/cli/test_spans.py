"""The spans of a file that workers read themselves (cli/spans.py): every line read once, as the
reader reads it."""

from __future__ import annotations

import gzip
import io
import itertools
import os
from pathlib import Path
from typing import IO, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urlsan.cli import inputs, spans
from urlsan.cli.inputs import BlockReader


def _as_read(lines: list[bytes], max_bytes: int) -> list[bytes]:
    """Lines as the processor sees them: one longer than ``max_bytes`` is just too long (kept
    whole or cut to ``max_bytes + 1`` bytes, depending on where the reads fell)."""
    return [b"<too long>" if len(line) > max_bytes else line for line in lines]


def _reader_lines(data: bytes, sep: bytes, max_bytes: int) -> list[bytes]:
    """The lines `BlockReader` hands on for ``data``."""
    stream = cast(IO[bytes], io.BufferedReader(io.BytesIO(data)))
    blocks = BlockReader(stream, sep, max_bytes, size=64)
    return _as_read([line for b in blocks for line in b.data.split(sep)[:-1]], max_bytes)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from([b"", b"a", b"http://h/x", b"y" * 45, b"\xc3\xa9"])),
    last_sep=st.booleans(),
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=8),
    sep=st.sampled_from([b"\n", b"\0"]),
)
def test_spans_read_each_line_once_as_the_reader_does(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    last_sep: bool,
    sizes: list[int],
    sep: bytes,
) -> None:
    """Workers read a file in spans (`spans.read_span`): every line is read by exactly one
    span, the one it starts in, as `BlockReader` reads it (an over-long line cut alike)."""
    head = b"first" + sep  # spans start after the first block, never at 0
    data = head + sep.join(lines) + (sep if last_sep else b"")
    path = tmp_path_factory.mktemp("spans") / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        got, start = [], len(head)
        for size in itertools.cycle(sizes):
            if start >= len(data):
                break
            got.append(spans.read_span(fd, start, min(start + size, len(data)), sep, 20))
            start += size
        assert spans.line_start(fd, len(data), sep) == len(data)  # where more would start
    finally:
        os.close(fd)
    joined = b"".join(got)
    assert joined.endswith(sep) or not joined
    assert _as_read(joined.split(sep)[:-1], 20) == _reader_lines(data, sep, 20)[1:]


def test_line_start_skips_to_the_next_line(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"ab\ncd\nef")
    fd = os.open(path, os.O_RDONLY)
    try:
        starts = [spans.line_start(fd, offset, b"\n") for offset in range(1, 9)]
    finally:
        os.close(fd)
    assert starts == [3, 3, 3, 6, 6, 6, 8, 8]  # 8: the end (the last line has no newline)


def test_spans_read_on_when_the_file_grows(tmp_path: Path) -> None:
    """Lines added to the file while workers read it are read too, as one process would."""
    path = tmp_path / "f"
    path.write_bytes(b"".join(b"http://h/%d\n" % i for i in range(100)))
    with path.open("rb") as stream:
        reader = BlockReader(stream, size=64)
        blocks = iter(reader)
        first = next(blocks)
        found = spans.file_spans(reader, 100)
        assert found is not None
        taken = [next(found) for _ in range(3)]
        assert all(b.span is not None and b.first == 0 for b in taken)
        with path.open("ab") as more:
            more.write(b"http://h/new\n")
        rest = list(found)
        read = first.data + b"".join(
            spans.read_span(*b.span, b"\n", 100) if b.span else b.data for b in [*taken, *rest]
        )
    assert read.split(b"\n")[-3:] == [b"http://h/99", b"http://h/new", b""]
    assert len(read.split(b"\n")) == 102


def test_no_spans_of_a_pipe_or_gzip(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"http://a/\n" * 20)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as stream:
        reader = BlockReader(stream, size=64)
        next(iter(reader))
        assert spans.file_spans(reader, 100) is None
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(b"http://a/\n" * 20))
    with inputs.open_input(str(path)) as stream:
        reader = BlockReader(stream, size=64)
        next(iter(reader))
        assert spans.file_spans(reader, 100) is None
    # Buffered again, a gzip stream still answers fileno() with the compressed file's.
    with io.BufferedReader(gzip.GzipFile(path)) as stream:  # type: ignore[arg-type]
        reader = BlockReader(stream, size=64)
        next(iter(reader))
        assert spans.file_spans(reader, 100) is None
