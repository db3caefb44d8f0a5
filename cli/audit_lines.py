"""The per-request work of ``urlsan audit``: `Auditor` decides one request, and `LogLines` a
block of access log lines (`cli.blocks.Block`), in this process or in a ``--jobs`` worker.

Most lines of a server's log ask for a target urlsan leaves as it is and finds nothing in: the
proxy records nothing for them (`decision.Outcome.recorded`).  `LogLines` finds those among
the lines of the common shape (`sources.LINES`, one match for a whole block) with one call to
`canonicalize` each (and the Host's check, with a virtual host): no `Request`, no time
parsed, no `Outcome`, no record.  Every other line is read by
`sources.access_line` and decided by `Auditor`, as `sources.read_access_log` and the proxy
would; tests/cli/test_audit_jobs.py holds the two ways to the same records.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..addon import decision
from ..audit import record, sources
from ..audit.redact import DEFAULT_REDACT, Redactor
from ..core import InvalidTarget, canonicalize
from .blocks import Block, Done
from .matching import Matcher
from .spans import read_span


class Auditor:
    """What the proxy would have recorded for one request: `urlsan.addon.decision` decides, as
    it does for the proxy, in the mode the proxy would have run in (audit by default)."""

    def __init__(
        self,
        settings: decision.Settings,
        redactor: Redactor | None = None,
        matches: Matcher | None = None,
    ) -> None:
        self.settings = settings
        self.redactor = redactor or Redactor.of(DEFAULT_REDACT)
        self.matches = matches  # --filter: the flows the proxy's urlsan_filter lets through

    def check(self, request: sources.Request) -> dict[str, Any] | None:
        """The audit record of ``request``, or None when the proxy would log nothing."""
        outcome = decision.examine(request, self.settings)
        if outcome is None or not outcome.recorded:
            return None
        ts = record.rfc3339(request.ts) if request.ts is not None else ""
        return decision.record(request, outcome, self.settings, ts)

    def quiet_check(self) -> Callable[[bytes, str | None], bool] | None:
        """A function of an origin-form request-target (bytes) and the Host it was sent to
        (None: none) saying True when `decision.examine` would leave a request for it without a
        record for want of anything to say (`decision.untouched`), without a `Request`: the
        target is no longer than ``max_target``, `canonicalize` leaves it as it is and finds
        nothing in it, and the Host is canonical.  None when the settings decide more than the
        target and Host (``backends``).  False means only that `check` must decide."""
        settings = self.settings
        if settings.backends:
            return None
        policy, fragment_policy, _ = settings.targets
        longest = settings.max_target

        def quiet(target: bytes, host: str | None) -> bool:
            # `decision.check`, as `examine` calls it: form "origin"; in reject mode a fragment
            # is checked by a policy of its own first.
            if len(target) > longest or (fragment_policy is not None and b"#" in target):
                return False
            if host is not None:  # parameter specs scoped by host; the Host's own check
                checked = decision.check(target, settings.targets, host)
                return decision.untouched(checked, settings, "", host, None)
            try:
                result = canonicalize(target, policy, form="origin")
            except InvalidTarget:
                return False
            return result.url == result.input and not result.findings

        return quiet


class LogLines:
    """Turns a block of access log lines into its audit records: a plain value, which a
    ``--jobs`` worker receives once, when it starts (forked: as it is; spawned: pickled, its
    `Auditor` made again from ``options``).

    Its `Done`: ``lines`` in the block, ``valid`` requests, ``changed`` records written, the
    records as one piece, and ``bad``: each unreadable line's number (from 0 when the block's
    first is not known) and why."""

    numbers_lines = False  # the records show no line numbers: workers may read file spans

    def __init__(self, auditor: Auditor, options: tuple[Any, ...] = ()) -> None:
        self.auditor = auditor
        self.options = options  # what `auditor_for` made the auditor from, for a spawned worker
        self.quiet = auditor.quiet_check()
        self._time: tuple[bytes, float | None] = (b"", None)

    def __reduce__(self) -> tuple[Any, ...]:
        from .audit import auditor_for  # the command's: a spawned worker makes it again

        return _rebuilt, (auditor_for, self.options)

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


def _rebuilt(make: Any, options: tuple[Any, ...]) -> LogLines:
    return LogLines(make(*options), options)
