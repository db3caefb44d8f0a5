"""Reading the input (cli/inputs.py): blocks of whole lines, bounded however long a line is."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import Any, cast

from urlsan.cli import inputs
from urlsan.cli.blocks import Block
from urlsan.cli.inputs import BlockReader
from urlsan.cli.processor import Processor
from urlsan.core import Policy


def _blocks(data: bytes, **options: Any) -> list[Block]:
    return list(BlockReader(io.BufferedReader(io.BytesIO(data)), **options))


def _lines(data: bytes, max_bytes: int, **options: Any) -> tuple[list[str], list[tuple[int, str]]]:
    sep = options.get("sep", b"\n")
    processor = Processor(Policy(), max_bytes=max_bytes, sep=sep)
    out: list[str] = []
    bad: list[tuple[int, str]] = []
    for block in _blocks(data, max_bytes=max_bytes, **options):
        done = processor(block)
        out += b"".join(done.pieces).decode().split(sep.decode())[:-1]
        bad += done.bad
    return out, bad


def test_the_reader_never_holds_a_long_line() -> None:
    data = b"http://a/\n" + b"x" * 1_000_000 + b"\nhttp://b/"
    blocks = _blocks(data, max_bytes=1000, size=4096)
    assert max(len(b.data) for b in blocks) <= 4096 + 1000 + 2
    assert _lines(data, 1000, size=4096) == (
        ["http://a/", "", "http://b/"],
        [(2, "longer than 1000 bytes")],
    )


def test_a_line_of_exactly_the_limit_is_fine() -> None:
    data = b"http://" + b"y" * 3 + b"\nhttp://" + b"z" * 3
    assert _lines(data, 10, size=4) == (["http://yyy/", "http://zzz/"], [])


def test_nul_separated_lines_may_hold_newlines() -> None:
    out, bad = _lines(b"HTTP://a/\0http://b/x\ny\0\0", 100, sep=b"\0")
    assert out == ["http://a/", "http://b/x%0Ay", ""]  # a newline inside a line is a character
    assert bad == [(3, "empty")]


def test_blocks_number_lines_and_end_when_full() -> None:
    data = b"".join(b"http://h/%d\n" % i for i in range(1000))
    blocks = _blocks(data, size=1024)
    assert len(blocks) > 5 and blocks[0].first == 1
    assert [b.first for b in blocks[1:]] == [b.first + b.data.count(b"\n") for b in blocks[:-1]]
    assert [b.pause for b in blocks] == [False] * (len(blocks) - 1) + [True]  # the end
    per_line = _blocks(data[:33], per_line=True)  # --line-buffered: a block per line
    assert [(b.data, b.first, b.pause) for b in per_line] == [
        (b"http://h/0\n", 1, True),
        (b"http://h/1\n", 2, True),
        (b"http://h/2\n", 3, True),
    ]


def test_closing_a_gzip_input_closes_its_file(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(b"http://a/\n"))
    stream = inputs.open_input(str(path))
    compressed = cast(gzip.GzipFile, stream).fileobj
    assert stream.read() == b"http://a/\n" and compressed is not None
    stream.close()
    assert compressed.closed  # not left open until the process ends


def test_a_pause_in_the_input_ends_a_block() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as stream:
        blocks = iter(BlockReader(stream))
        os.write(write_end, b"http://a/\nhttp://b")  # a line and a half, then nothing
        first = next(blocks)
        assert (first.data, first.first, first.pause) == (b"http://a/\n", 1, True)
        os.write(write_end, b"/\n")
        os.close(write_end)
        assert [(b.data, b.first) for b in blocks] == [(b"http://b/\n", 2)]
