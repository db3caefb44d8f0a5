"""Loopback ports: one the kernel picks, and waiting until something listens on one."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick for a socket bound to port 0)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def wait_for_port(
    port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 15.0
) -> None:
    """Return once ``port`` accepts a connection; RuntimeError if ``proc`` exits first or time
    runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {LOOPBACK}:{port} after {timeout}s")
