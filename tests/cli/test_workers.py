"""The wire to forked workers (cli/workers.py)."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from urlsan.cli import workers


def test_a_channel_carries_messages_longer_than_its_pipe() -> None:
    """The pipes to forked workers: a block's output over the pipe's size (a megabyte of
    lines of "é" is three as output) arrives whole, in order; a closed end is an EOFError,
    which the pool reports as a dead worker."""
    out_read, out_write = os.pipe()
    in_read, in_write = os.pipe()
    sender, receiver = workers._Channel(in_read, out_write), workers._Channel(out_read, in_write)
    big = bytes(range(256)) * (3 * 4096 + 7)  # 3 MiB and a bit
    messages: list[Any] = [("head", 3, None), big, b"", b"x" * 70_000]
    feeder = threading.Thread(
        target=lambda: [
            sender.send(m) if isinstance(m, tuple) else sender.send_bytes(m) for m in messages
        ]
    )
    feeder.start()
    try:
        assert receiver.recv() == messages[0]
        assert [receiver.recv_bytes() for _ in range(3)] == messages[1:]
    finally:
        feeder.join()
    sender.close()
    with pytest.raises(EOFError):
        receiver.recv_bytes()
    receiver.close()
