"""What `urlsan` shows a person at a terminal: a real pseudo-terminal, the command a process."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from urlsan.cli.terminal import safe_bytes

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")

URLSAN = [sys.executable, "-m", "urlsan"]


def _read_until(fd: int, want: bytes, timeout: float = 60) -> bytes:
    seen = b""
    end = time.monotonic() + timeout
    while want not in seen and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other end closed (EIO on Linux)
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_binary_input_is_never_written_raw_to_a_terminal(tmp_path: Path) -> None:
    binary = tmp_path / "blob"
    binary.write_bytes(b"http://a/\x1b]0;owned\x07\xff\xfe\n/ok\n\x9b31m\n")
    main, child = os.openpty()
    try:
        proc = subprocess.run(
            [*URLSAN, "canon", "-i", str(binary)],
            stdout=child,
            stderr=subprocess.PIPE,
            timeout=60,
        )
        os.close(child)
        shown = _read_until(main, b"never")
    finally:
        os.close(main)
    assert proc.returncode == 3  # bad lines, reported on stderr
    assert b"\x1b" not in shown and b"\x07" not in shown and b"\xff" not in shown
    assert b"http://a/\\x1b]0;owned\\x07\\xff\\xfe" in shown
    assert b"/ok" in shown


def test_a_pipe_still_gets_the_bytes_as_they_came(tmp_path: Path) -> None:
    binary = tmp_path / "blob"
    binary.write_bytes(b"http://a/\x1b\xff\n")
    proc = subprocess.run([*URLSAN, "canon", "-i", str(binary)], capture_output=True, timeout=60)
    assert proc.stdout == b"http://a/\x1b\xff\n"  # --on-error pass: unchanged, for a program


def test_reading_from_a_terminal_says_so() -> None:
    main, child = os.openpty()
    try:
        proc = subprocess.Popen(
            [*URLSAN, "canon"],
            stdin=child,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        os.close(child)
        assert proc.stderr is not None
        hint = _read_until(proc.stderr.fileno(), b"\n", timeout=30)
        if not hint:
            proc.kill()
        os.write(main, b"HTTP://Example.COM/%7e\n\x04")  # a line, then Ctrl-D
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(main)
    assert hint == (
        b"urlsan canon: reading URLs from the terminal, one per line; Ctrl-D ends "
        b"(Ctrl-Z Enter on Windows)\n"
    )
    assert out == b"http://example.com/~\n"


@pytest.mark.parametrize(
    "data, shown",
    [
        (b"/a\n", b"/a\n"),
        (b"/\xc3\xa9\n", b"/\xc3\xa9\n"),  # UTF-8 is shown as it is
        (b"/\x1b[2J\r\n", b"/\\x1b[2J\\x0d\n"),
        (b"/\xc2\x9b", b"/\\x9b"),  # a C1 control, as UTF-8
        (b"/\x9b\xff", b"/\\x9b\\xff"),  # bytes that are no UTF-8
    ],
)
def test_safe_bytes(data: bytes, shown: bytes) -> None:
    assert safe_bytes(data) == shown
