"""Servers behind a proxy, each with an application that answers with the path it routes on.

Every server of tests/backends is an `EchoServer`: a process of its own on 127.0.0.1 and a free
port, started from a temporary directory (never the system's service), answering each
request-target either 200 with the path its application routes on (the body: bytes as the
application wrote them) or a status of its own (it refused the target before any routing).
`read` sends one target on a fresh connection and gives back a `Reading`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Self

from .ports import free_port
from .process import Process
from .wire import Response, raw_request


class Reading(NamedTuple):
    """What one server made of one target: its status, and the path its application received
    (None when the application was not reached)."""

    status: int
    path: bytes | None


class EchoServer:
    """A server process answering with the path it routes on (subclasses say how to start it)."""

    name = ""
    ready: re.Pattern[str] | None = re.compile(r"listening on")  # None: the port alone
    ready_timeout = 60.0

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix=f"urlsan-{self.name}-"))
        self.port = free_port()
        self.proc: Process | None = None

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        """The argv and environment (None: this one's) that start the server."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        argv, env = self.command()
        self.proc = Process(argv, cwd=self.tmp, env=env, group=True)
        try:
            if self.ready is not None:
                self.proc.wait_for_line(self.ready, self.ready_timeout)
            self.proc.wait_for_port(self.port, self.ready_timeout)
        except RuntimeError as e:
            out = self.proc.output()[-4000:]
            self.__exit__()
            raise RuntimeError(f"{self.name} did not start: {e}\n{out}") from e
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def read(self, target: bytes) -> Reading:
        """``GET target`` on a fresh connection: 200 and the body, or the status alone."""
        return self.reading(raw_request(self.port, target))

    def reading(self, response: Response) -> Reading:
        """What ``response`` (from this server, or through a proxy in front of it) says the
        application received: 200 and the body, or the status alone."""
        if response.status == 200:
            return Reading(200, response.body)
        return Reading(response.status, None)
