"""The per-line work of ``urlsan audit`` on an access log: `LogLines` turns a block of its lines
(`cli.blocks.Block`) into their audit records, in this process or in a ``--jobs`` worker.

Most lines of a server's log ask for a target urlsan leaves as it is and finds nothing in: the
proxy records nothing for them (`decision.Outcome.recorded`).  `LogLines` finds those among
the lines of the common shape (`sources.LINES`, one match for a whole block) with one call to
`canonicalize` each (and the Host's check, with a virtual host): no `Request`, no time
parsed, no `Outcome`, no record.  Every other line is read by `sources.access_line` and
decided by the command's `Auditor`, as `sources.read_access_log` and the proxy would;
tests/cli/test_audit_jobs.py holds the two ways to the same records.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol

from ..audit import record, sources
from ..audit.redact import Redactor
from .blocks import Block, Done
from .spans import read_span

Quiet = Callable[[bytes, str | None], bool]


class Auditor(Protocol):
    """What decides a request (the command's `cli.audit.Auditor`)."""

    redactor: Redactor

    def check(self, request: sources.Request) -> dict[str, Any] | None:
        """The audit record of ``request``, or None."""
        ...

    def quiet_check(self) -> Quiet | None:
        """A test of an origin-form target and its Host: True when no record is written."""
        ...


class LogLines:
    """Turns a block of access log lines into its audit records: a plain value, which a
    ``--jobs`` worker receives once, when it starts (forked: as it is; spawned: pickled, its
    `Auditor` made again: ``make(*options)``).

    Its `Done`: ``lines`` in the block, ``valid`` requests, ``changed`` records written, the
    records as one piece, and ``bad``: each unreadable line's number (from 0 when the block's
    first is not known) and why."""

    numbers_lines = False  # the records show no line numbers: workers may read file spans

    def __init__(
        self,
        auditor: Auditor,
        make: Callable[..., Auditor] | None = None,
        options: tuple[Any, ...] = (),
    ) -> None:
        self.auditor = auditor
        self.make, self.options = make, options  # what made it, for a spawned worker
        self.quiet = auditor.quiet_check()
        self._time: tuple[bytes, float | None] = (b"", None)

    def __reduce__(self) -> tuple[Any, ...]:
        if self.make is None:
            raise TypeError("LogLines pickles only with what makes its Auditor (make=)")
        return _rebuilt, (self.make, self.options)

    def __call__(self, block: Block) -> Done:
        data = block.data
        if block.span is not None:
            data = read_span(*block.span, b"\n", sys.maxsize)
        rows = sources.LINES.findall(data)
        rows.pop()  # the empty row after the last line end
        out: list[bytes] = []
        bad: list[tuple[int, str]] = []
        quiet = self.quiet or _never
        others = 0  # lines that are no request: blank or unreadable
        for number, row in enumerate(rows, block.first):
            vhost, client, time, method, target, version, status, line = row
            if not target:  # a line of another shape: read alone
                item = sources.access_line(line + b"\n", "")
                if isinstance(item, sources.Request):
                    self._record(item, out)
                else:
                    others += 1
                    if item is not None:
                        bad.append((number, item.why))
                continue
            host = vhost.decode("utf-8", "surrogateescape") if vhost else None
            if method == b"CONNECT" or quiet(target, host):
                continue  # nothing recorded; CONNECT: no target to audit (`examine`)
            request = sources.Request(
                ts=self._clf_time(time),
                client=client.decode("utf-8", "surrogateescape"),
                method=method.decode("ascii"),
                scheme="",
                host=host,
                target=target,
                http_version=version.decode("ascii"),
                where="",
                status=None if status == b"-" else int(status),
            )
            self._record(request, out)
        return Done(len(rows), len(rows) - others, len(out), [b"".join(out)], bad, [])

    def _record(self, request: sources.Request, out: list[bytes]) -> None:
        rec = self.auditor.check(request)
        if rec is not None:
            out.append(record.serialize(rec, self.auditor.redactor))

    def _clf_time(self, value: bytes) -> float | None:
        """`sources.clf_time`, the last one kept: a log writes many lines a second."""
        last, ts = self._time
        if value != last:
            ts = sources.clf_time(value)
            self._time = (value, ts)
        return ts


def _never(target: bytes, host: str | None) -> bool:
    return False


def _rebuilt(make: Callable[..., Auditor], options: tuple[Any, ...]) -> LogLines:
    return LogLines(make(*options), make, options)
