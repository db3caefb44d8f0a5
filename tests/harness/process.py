"""A process we started: its output read line by line in a thread, stopped when we are done.

Only processes started here are stopped here, each by its own pid (or, for a script that starts
children, by the process group it leads).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .ports import wait_for_port

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without proxy variables (everything here talks to loopback directly),
    and with ``extra``."""
    env = dict(os.environ)
    for name in _PROXY_VARIABLES:
        env.pop(name, None)
    env.update(extra)
    return env


def stop(
    proc: subprocess.Popen[Any],
    timeout: float = 10.0,
    sig: int = signal.SIGTERM,
    group: bool = False,
) -> None:
    """Stop one process we started: ``sig`` (SIGTERM; SIGINT is a user's ^C), then SIGKILL if
    it does not go within ``timeout``.  ``group``: signal the process group it leads (started
    with ``start_new_session``), for a script that runs the real server as its child."""

    def send(s: int) -> None:
        if group:
            with contextlib.suppress(ProcessLookupError):  # the whole group is gone
                os.killpg(proc.pid, s)
        else:
            proc.send_signal(s)

    if proc.poll() is not None and not group:  # a group may outlive its leader
        return
    send(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait(timeout)


class Process:
    """``argv`` started with stdout and stderr into one pipe, read here into ``lines``.

    A pipe, not a file: the process's own limits (an RLIMIT_FSIZE) do not apply to it, and it
    never fills, since a thread reads it to the end.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        stop_signal: int = signal.SIGTERM,
        stop_timeout: float = 10.0,
        group: bool = False,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.stop_signal = stop_signal
        self.stop_timeout = stop_timeout
        self.group = group
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.popen = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            preexec_fn=preexec_fn,
            start_new_session=group,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for raw in self.popen.stdout:
            with self._changed:
                self.lines.append(raw.decode("utf-8", "replace").rstrip())
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def output(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def wait_for_line(self, pattern: re.Pattern[str], timeout: float = 30.0) -> re.Match[str]:
        """The first line of output that ``pattern`` finds; RuntimeError if the process ends
        or ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    m = pattern.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    break
                self._changed.wait(min(left, 0.5))
        why = "its output ended" if not self._reader.is_alive() else f"none after {timeout}s"
        raise RuntimeError(f"no line matching {pattern.pattern!r}: {why}")

    def wait_for_port(self, port: int, timeout: float = 15.0) -> None:
        wait_for_port(port, self.popen, timeout)

    def stop(self) -> None:
        stop(self.popen, self.stop_timeout, self.stop_signal, self.group)
        self._reader.join(10)
        if self.popen.stdout is not None:
            self.popen.stdout.close()

    def __enter__(self) -> Process:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
