"""Run `urlsan` in-process with its standard streams replaced: fast, and exit statuses exact.

(A plain module, not conftest.py: test modules import `Run` and `RunUrlsan` from it.)
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from urlsan.cli.main import main


class Run(NamedTuple):
    status: int
    out: bytes
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.decode().splitlines()


RunUrlsan = Callable[..., Run]


def make_runner(monkeypatch: pytest.MonkeyPatch) -> RunUrlsan:
    def run(*argv: str, stdin: bytes = b"") -> Run:
        out, err = io.BytesIO(), io.StringIO()
        stdin_stream = io.TextIOWrapper(io.BufferedReader(io.BytesIO(stdin)), encoding="utf-8")
        stdout_stream = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
        monkeypatch.setattr(sys, "stdin", stdin_stream)
        monkeypatch.setattr(sys, "stdout", stdout_stream)
        monkeypatch.setattr(sys, "stderr", err)
        try:
            status = main(list(argv))
        finally:
            stdout_stream.flush()
            monkeypatch.undo()
        return Run(status, out.getvalue(), err.getvalue())

    return run


# `urlsan` as a real process, for what only a real process shows: pipes, signals, workers.
URLSAN = [sys.executable, "-m", "urlsan"]


def worker_pids(pid: int) -> list[int]:
    """The ids of the worker processes of process ``pid``: its children forked from it (their
    command line is its own) or spawned by multiprocessing, less multiprocessing's resource
    tracker; another program a test started under pytest (Spark's JVM) is none of them."""
    try:
        own = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            spawned = b"multiprocessing" in cmdline and b"resource_tracker" not in cmdline
            if cmdline == own or spawned:
                found.append(int(child))
    return found
