"""The one pass of `urlsan report` over audit logs (JSON Lines written by the proxy or
``urlsan audit``): `Summary`, and its JSON form (`Summary.as_dict`) that the terminal tables
(`urlsan.audit.tables`) and the HTML page (`urlsan.audit.page`) are drawn from.

Memory grows with the number of distinct hosts, clients and rules, never with the number of
lines: the timeline keeps at most a few hundred time slots, coarsened as the time span grows.  A log
that is still being written is fine: an unparsable last line without its newline is taken as the
record being written and left out, not counted as malformed.  A file most of whose lines are not
audit records (JSON objects with an ``action``) is not an audit log: `Summary.not_audit_logs`
names it, and ``urlsan report`` refuses it rather than report "0 requests".

`Summary.read` takes a log in blocks of 8 MiB: the records of a block in the writer's own shape
(most of a log) are matched and counted by the block (`urlsan.audit.bulk`: in C where it is
built), and of those only the findings are read by ``json.loads``; every other line is read by
``json.loads`` and `add`, and the summary is the one reading every line with ``json.loads``
gives, down to the order of equal counts (tests/audit/test_report_bulk.py).

Findings are shown by severity (a record written before findings carried one gets it from
`urlsan.core.taxonomy`), with the weaknesses each points at, the requests answered 2xx, and a
drill-down: per finding kind, the first requests (`_MAX_REQUESTS`) and the hosts and clients
that sent it (counted for the first `_MAX_DISTINCT` of each).
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, cast

from ..core import taxonomy
from ..core.policy import DEFAULT_PORTS
from ..core.result import rule_names
from . import bulk
from .record import CHANGING, parse_time

_BACKEND_EXAMPLES = 3  # requests shown per server in the backends table
_MALFORMED_SAMPLES = 5
# Time buckets for the timeline, the smallest that gives at most _MAX_COLUMNS columns.  Up to a
# day each divides the next, so counts kept per bucket of one size add up into the next ones.
_BUCKETS = (1, 5, 10, 30, 60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400)
_MAX_COLUMNS = 120
_MAX_RESOLUTION = 86400  # slots kept per day at most: days are few, and every bucket is whole days
# A port that only repeats the scheme's default: "h:80" is "h" for http (RFC 3986 §6.2.3).
_DEFAULT_PORTS = {scheme: f":{port}" for scheme, port in DEFAULT_PORTS.items()}
_ANY_DEFAULT_PORT = tuple(sorted(set(_DEFAULT_PORTS.values())))  # no scheme recorded
_MAX_REQUESTS = 20  # requests kept per finding kind for the drill-down
_MAX_DISTINCT = 1000  # hosts and clients counted per finding kind; the others are "(other)"
SUSPICIOUS = "medium"  # the least severity of a suspicious request (answered 2xx, ...)
_BLOCK = 1 << 23  # bytes read at once: 8 MiB, some 15,000 records
_MINUTES = 4096  # minutes whose start is kept while reading


@dataclass
class Kind:
    """One finding kind in the logs: how often, how severe, and who sent it."""

    count: int = 0  # findings (one per record and component)
    records: int = 0  # records that hold it
    answered_2xx: int = 0  # of those, the ones the server answered with a 2xx status
    severity: str = "info"  # the highest seen
    hosts: Counter[str] = field(default_factory=Counter)
    clients: Counter[str] = field(default_factory=Counter)
    requests: list[dict[str, Any]] = field(default_factory=list)  # the first _MAX_REQUESTS

    def as_dict(self, rule: str) -> dict[str, Any]:
        return {
            "rule": rule,
            "severity": self.severity,
            "weaknesses": [
                {"id": w, "source": taxonomy.source(w)} for w in taxonomy.weaknesses(rule)
            ],
            "count": self.count,
            "requests": self.records,
            "answered_2xx": self.answered_2xx,
            "example": self.requests[0] if self.requests else {},
            "hosts": dict(self.hosts.most_common(_MAX_REQUESTS)),
            "distinct_hosts": len(self.hosts),
            "clients": dict(self.clients.most_common(_MAX_REQUESTS)),
            "distinct_clients": len(self.clients),
            "occurrences": self.requests,
        }


def _severity_of(finding: dict[str, Any]) -> str:
    """A finding's severity as its record says, or as the taxonomy gives it (an older log)."""
    sev = finding.get("severity")
    if sev in taxonomy.SEVERITIES:
        return str(sev)
    occurrences = finding.get("occurrences")
    return taxonomy.severity(
        _text(finding.get("rule"), ""),
        _text(finding.get("component"), ""),
        _text(finding.get("detail"), ""),
        occurrences if type(occurrences) is int else 1,
    )


def _count_capped(counter: Counter[str], key: str) -> None:
    if key in counter or len(counter) < _MAX_DISTINCT:
        counter[key] += 1
    else:
        counter["(other)"] += 1


@dataclass(slots=True)
class Tally:
    """Requests seen for one host, client, or time bucket."""

    requests: int = 0
    changed: int = 0
    rejected: int = 0

    def add(self, action: str, n: int = 1) -> None:
        self.requests += n
        if action in CHANGING:
            self.changed += n
        elif action == "rejected":
            self.rejected += n

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "changed": self.changed, "rejected": self.rejected}


class _Reading:
    """One log being read: where, what it held so far, and its plain records being counted
    (`urlsan.audit.bulk`: their counts not yet added to the `Summary`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.number = 0  # the last line read
        self.records = 0
        self.foreign = 0  # lines that are no audit record
        self.scanner = bulk.scanner()
        self.rules: dict[bytes, tuple[list[str], list[str]]] = {}  # edits: (fired, distinct)
        self._minutes: dict[bytes, int | None] = {}

    def minute(self, minute: bytes) -> int | None:
        """The start of b"2026-11-22T04:00" in seconds since the epoch; None if no such time."""
        start = self._minutes.get(minute, 0)
        if start == 0:
            if len(self._minutes) >= _MINUTES:
                self._minutes.clear()
            ts = parse_time(minute.decode("ascii") + ":00Z")
            start = self._minutes[minute] = None if ts is None else math.floor(ts.timestamp())
        return start


@dataclass
class Summary:
    """What `urlsan report` knows after reading; feed it with `read` or `add`."""

    top: int = 10
    min_severity: str = "info"  # findings below it are left out of the findings views
    findings_by: str = "severity"  # or "count": the order of the findings views
    sources: list[str] = field(default_factory=list)
    lines: int = 0
    requests: int = 0
    malformed: int = 0
    malformed_samples: list[str] = field(default_factory=list)
    incomplete: int = 0  # unfinished last lines of logs still being written
    with_status: int = 0  # records that say how the server answered (an int "status")
    actions: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)  # requests each rule rewrote
    edits: Counter[str] = field(default_factory=Counter)  # edits each rule made
    findings: Counter[str] = field(default_factory=Counter)
    finding_examples: dict[str, dict[str, Any]] = field(default_factory=dict)
    kinds: dict[str, Kind] = field(default_factory=dict)
    severities: Counter[str] = field(default_factory=Counter)  # records by their highest
    # Records with findings by their target's severity (the record's "target_severity": the
    # worst reader's reading; an older record's highest finding), with those answered 2xx and
    # the first `_MAX_REQUESTS` of each severity.
    targets: Counter[str] = field(default_factory=Counter)
    targets_2xx: Counter[str] = field(default_factory=Counter)
    target_requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    suspicious_2xx: int = 0  # records whose target is SUSPICIOUS or above, answered 2xx
    suspicious_requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    hosts: dict[str, Tally] = field(default_factory=dict)
    clients: dict[str, Tally] = field(default_factory=dict)
    # Requests each protected server would route otherwise than RFC 3986 (a record's
    # "backends"), those that climb out of a directory, and the first few of them.
    backends: Counter[str] = field(default_factory=Counter)
    backends_climbing: Counter[str] = field(default_factory=Counter)
    backend_examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The timeline: requests per `resolution` seconds, keyed by epoch seconds // resolution.
    slots: dict[int, Tally] = field(default_factory=dict)
    resolution: int = 1
    first: datetime | None = None
    last: datetime | None = None
    # Inputs that are not audit logs: (name, lines, lines that are not records, records).
    not_audit_logs: list[tuple[str, int, int, int]] = field(default_factory=list)
    # The rules each edit's "rule" names (`rule_names`), as seen: few, and each seen often.
    _names: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)
    # `first` and `last` in whole seconds since the epoch, for `_widen`.
    _first_second: int = field(default=0, repr=False, compare=False)
    _last_second: int = field(default=0, repr=False, compare=False)

    def read(self, stream: IO[bytes], name: str) -> None:
        """Add every record of the log ``stream`` (binary), called ``name`` in messages.

        Read in blocks of whole lines: the plain records of a block are counted together
        (`urlsan.audit.bulk`), every other line by `_line`, in the order of the lines where
        order shows (the first of equal counts is listed first)."""
        self.sources.append(name)
        reading = _Reading(name)
        try:
            if rest := self._read_blocks(cast(io.BufferedIOBase, stream), reading):
                reading.number += 1  # a last line without its line end
                self.lines += 1
                self._line(rest, reading)
        finally:
            self._add_plain(reading)
        # Not an audit log: no record at all, or more lines that are not records than that are
        # (a binary file, another JSON Lines file, a HAR or access log given to the wrong command).
        if reading.foreign > reading.records:
            self.not_audit_logs.append((name, reading.number, reading.foreign, reading.records))

    def _read_blocks(self, stream: io.BufferedIOBase, reading: _Reading) -> bytes:
        """The whole lines of ``stream``, a buffer of them at a time, to `_add_block`; the start
        of a line that is not whole yet kept at the front of the buffer for the next, the buffer
        grown for a line longer than it.  Returns the last line when it has no line end.

        One buffer, filled again and again (``readinto``): a new 8 MiB object for each block
        would be fresh memory for the system to hand over, page by page, each time."""
        buf = bytearray(_BLOCK)
        kept = 0  # bytes at the front of buf: the start of a line
        while True:
            if kept == len(buf):  # a line longer than the buffer
                buf.extend(bytes(len(buf)))
            with memoryview(buf) as view:
                with view[kept:] as free:
                    n = stream.readinto(free)
                if not n:
                    return bytes(buf[:kept])
                filled = kept + n
                end = buf.rfind(b"\n", 0, filled) + 1
                if end:
                    with view[:end] as lines:
                        self._add_block(lines, reading)
                    buf[: filled - end] = buf[end:filled]  # as long: the buffer is not resized
                kept = filled - end

    def _line(self, raw: bytes, reading: _Reading) -> None:
        """One line that is not a plain record, read by ``json.loads``."""
        line = raw.strip()
        if not line:
            return
        try:
            record = _loads(line)
            if not isinstance(record, dict) or "action" not in record:
                raise ValueError("not an audit record")
        except ValueError:
            # Only the last line can lack its newline: the writer may be in the middle of
            # this record, if it is the start of one (a binary file is not).
            if not raw.endswith(b"\n") and line.startswith(b"{") and line.isascii():
                self.incomplete += 1
            else:
                reading.foreign += 1
                self._malformed(f"{reading.name}:{reading.number}")
            return
        reading.records += 1
        self.add(record)

    def _add_block(self, lines: bytes | memoryview, reading: _Reading) -> None:
        """Whole lines: the plain records counted by the scanner, the others one by one, and
        the first appearance of an action or a rule where the lines put it.  The timeline is
        counted by the second while its slots are finer than a minute (they only grow)."""
        scan = bulk.Scan._make(reading.scanner.scan(lines, self.resolution < 60))
        first = reading.number + 1
        events = [(i, 1, line) for i, line in scan.others]
        events += [e for e in scan.firsts if e[1] == 2 or bulk.text(e[2]) not in self.actions]
        events += [(i, 3, line) for i, line in scan.found]
        events.sort(key=lambda e: e[0])
        for i, what, value in events:
            if what == 1:
                reading.number = first + i
                self._line(value + b"\n", reading)
            elif what == 3:
                self._found(_loads(value))
            elif what == 0:
                self.actions[bulk.text(value)] += 0  # listed from here, counted below
            else:
                self._first_rules(value, reading)
        reading.number = first + scan.lines - 1
        self.lines += scan.lines
        if scan.plain:
            reading.records += scan.plain
            self.requests += scan.plain
            self.with_status += scan.plain - scan.nulls
            self._count_times(scan, reading)

    def _found(self, record: dict[str, Any]) -> None:
        """The findings of a record the scanner counted otherwise (as `add` counts them)."""
        host = _host_key(record.get("host"), record.get("scheme"))
        self._add_findings(record, record["findings"], host, _client_address(record["client"]))

    def _first_rules(self, edits: bytes, reading: _Reading) -> None:
        """An edit shape seen first: its rules listed where a record of it first came."""
        fired = [n for r in bulk.rules(edits) for n in rule_names(r)]
        distinct = list(set(fired))  # in the order `add` lists them
        reading.rules[edits] = (fired, distinct)
        for rule in distinct:
            self.rules[rule] += 0

    def _count_times(self, scan: bulk.Scan, reading: _Reading) -> None:
        """The plain records of a block on the timeline (its slots coarsen as it widens)."""
        starts = {m: s for m in scan.minutes if (s := reading.minute(m)) is not None}
        if not starts:  # no such day or time (2026-02-30)
            return
        first = min(scan.minutes[m][0] for m in starts)
        last = max(scan.minutes[m][1] for m in starts)
        for stamp in (first, last):
            ts = parse_time(stamp.decode("ascii") + "Z")
            assert ts is not None
            self._widen(ts, math.floor(ts.timestamp()))
        for key, n in scan.times.items():
            start = starts.get(key[0])
            if start is not None:
                # A minute's start is a multiple of 60, and so is a slot of a minute or more.
                second = int(key[1]) if len(key) == 3 else 0
                slot = self.slots.setdefault((start + second) // self.resolution, Tally())
                slot.add(bulk.text(key[-1]), n)

    def _add_plain(self, reading: _Reading) -> None:
        """The counts of the plain records read, by action, host, client and rule."""
        totals = bulk.Totals._make(reading.scanner.take())
        for action, n in totals.actions.items():
            self.actions[bulk.text(action)] += n
        for (origin, action), n in totals.hosts.items():
            scheme, host = bulk.origin(origin)
            self.hosts.setdefault(_host_key(host, scheme), Tally()).add(bulk.text(action), n)
        for (client, action), n in totals.clients.items():
            address = client.decode("ascii")
            self.clients.setdefault(address, Tally()).add(bulk.text(action), n)
        for edits, n in totals.edits.items():
            fired, distinct = reading.rules[edits]
            for rule in fired:
                self.edits[rule] += n
            for rule in distinct:
                self.rules[rule] += n

    def _malformed(self, where: str) -> None:
        self.malformed += 1
        if len(self.malformed_samples) < _MALFORMED_SAMPLES:
            self.malformed_samples.append(where)

    def add(self, record: dict[str, Any]) -> None:
        """Count one audit record; fields missing or of the wrong type count as unknown."""
        self.requests += 1
        self.with_status += type(record.get("status")) is int
        action = _text(record.get("action"), "unknown")
        self.actions[action] += 1
        host = _host_key(record.get("host"), record.get("scheme"))
        self.hosts.setdefault(host, Tally()).add(action)
        client = _client_address(record.get("client"))
        self.clients.setdefault(client, Tally()).add(action)

        edits = record.get("edits")
        if isinstance(edits, list) and edits:
            fired: list[str] = []
            for edit in edits:
                if isinstance(edit, dict) and isinstance(rule := edit.get("rule"), str):
                    # An edit core folded names each of its rules ("a+b"): each counts.
                    names = self._names.get(rule)
                    if names is None:
                        names = self._names[rule] = rule_names(rule)
                    fired += names
            if fired:
                self.edits.update(fired)
                self.rules.update(set(fired))
        findings = record.get("findings")
        if isinstance(findings, list) and findings:
            self._add_findings(record, findings, host, client)
        readings = record.get("backends")
        if isinstance(readings, list) and readings:
            self._add_backends(record, readings, action)

        ts = parse_time(record.get("ts"))
        if ts is not None:
            second = math.floor(ts.timestamp())
            self._widen(ts, second)
            self.slots.setdefault(second // self.resolution, Tally()).add(action)

    def _widen(self, ts: datetime, second: int) -> None:
        """The time range with ``ts`` (``second``: its whole seconds since the epoch) in it, the
        slots coarsened if it grew past what they can draw (`_coarsen`'s test, without its
        call: the span only grows, and most records widen it)."""
        wider = False
        if self.first is None or ts < self.first:
            self.first, self._first_second, wider = ts, second, True
        if self.last is None or ts > self.last:
            self.last, self._last_second, wider = ts, second, True
        span = self._last_second - self._first_second
        if wider and self.resolution < _MAX_RESOLUTION and span >= _MAX_COLUMNS * self.resolution:
            self._coarsen()

    def _add_backends(self, record: dict[str, Any], readings: list[Any], action: str) -> None:
        """One record's servers that read its target otherwise: counted per server, the first
        `_BACKEND_EXAMPLES` kept (the target, the server's path, RFC 3986's, the action)."""
        for reading in readings:
            if not isinstance(reading, dict) or not isinstance(reading.get("server"), str):
                continue
            server = reading["server"]
            self.backends[server] += 1
            self.backends_climbing[server] += reading.get("climbs") is True
            examples = self.backend_examples.setdefault(server, [])
            if len(examples) < _BACKEND_EXAMPLES:
                examples.append(
                    {
                        "before": _text(record.get("before"), ""),
                        "path": _text(reading.get("path"), ""),
                        "rfc": _text(reading.get("rfc"), ""),
                        "action": action,
                    }
                )

    def _add_findings(
        self, record: dict[str, Any], findings: list[Any], host: str, client: str
    ) -> None:
        """The findings of one record: counted per kind, its request kept for the drill-down
        (the first `_MAX_REQUESTS` per kind), and whether a suspicious request got a 2xx."""
        status = record.get("status")
        ok = type(status) is int and 200 <= status < 300
        least = taxonomy.rank(self.min_severity)
        top = -1
        seen: set[str] = set()
        for finding in findings:
            if not isinstance(finding, dict):
                continue
            sev = _severity_of(finding)
            rank = taxonomy.rank(sev)
            top = max(top, rank)
            if rank < least:
                continue
            rule = _text(finding.get("rule"), "unknown")
            kind = self.kinds.get(rule)
            if kind is None:
                kind = self.kinds[rule] = Kind(severity=sev)
            elif rank > taxonomy.rank(kind.severity):
                kind.severity = sev
            self.findings[rule] += 1
            kind.count += 1
            if rule in seen:  # the same kind in another component of the same request
                continue
            seen.add(rule)
            kind.records += 1
            kind.answered_2xx += ok
            _count_capped(kind.hosts, host)
            _count_capped(kind.clients, client)
            if len(kind.requests) < _MAX_REQUESTS:
                kind.requests.append(_occurrence(record, finding, host, sev))
            if rule not in self.finding_examples:
                self.finding_examples[rule] = kind.requests[0]
        if top >= 0:
            self.severities[taxonomy.SEVERITIES[top]] += 1
            self._add_target(record, findings, host, top, ok)

    def _add_target(
        self, record: dict[str, Any], findings: list[Any], host: str, top: int, ok: bool
    ) -> None:
        """One record's target by its severity (`urlsan.core.severity`, as the record says; an
        older record's highest finding), kept when at ``min_severity`` or above."""
        target = record.get("target_severity")
        if target not in taxonomy.SEVERITIES:
            target = taxonomy.SEVERITIES[top]
        rank = taxonomy.rank(target)
        if rank < taxonomy.rank(self.min_severity):
            return
        self.targets[target] += 1
        self.targets_2xx[target] += ok
        suspicious = ok and rank >= taxonomy.rank(SUSPICIOUS)
        self.suspicious_2xx += suspicious
        kept = [self.target_requests.setdefault(target, [])]
        if suspicious:
            kept.append(self.suspicious_requests.setdefault(target, []))
        if any(len(k) < _MAX_REQUESTS for k in kept):
            worst = max(
                (f for f in findings if isinstance(f, dict)),
                key=lambda f: taxonomy.rank(_severity_of(f)),
            )
            shown = _occurrence(record, worst, host, target)
            for k in kept:
                if len(k) < _MAX_REQUESTS:
                    k.append(shown)

    def suspicious_ranked(self) -> list[dict[str, Any]]:
        """The suspicious requests answered 2xx that were kept, the most severe target first,
        then in the order they came: at most `_MAX_REQUESTS`."""
        ranked = reversed(taxonomy.SEVERITIES)
        return [r for sev in ranked for r in self.suspicious_requests.get(sev, [])][:_MAX_REQUESTS]

    def findings_ranked(self) -> list[tuple[str, Kind]]:
        """The finding kinds, most severe first (then most frequent), or most frequent first."""
        if self.findings_by == "count":
            return sorted(self.kinds.items(), key=lambda kv: (-kv[1].count, kv[0]))
        return sorted(
            self.kinds.items(),
            key=lambda kv: (-taxonomy.rank(kv[1].severity), -kv[1].count, kv[0]),
        )

    def _coarsen(self) -> None:
        """Keep the slots no finer than the timeline's buckets: memory stays flat."""
        assert self.first is not None and self.last is not None
        span = math.floor(self.last.timestamp()) - math.floor(self.first.timestamp())
        if span // self.resolution < _MAX_COLUMNS:
            return
        size = min(_bucket_size(span), _MAX_RESOLUTION)
        factor = size // self.resolution
        slots: dict[int, Tally] = {}
        for key, tally in self.slots.items():
            _merge(slots.setdefault(key // factor, Tally()), tally)
        self.slots, self.resolution = slots, size

    def timeline(self) -> tuple[int, list[tuple[int, Tally]]]:
        """The bucket size in seconds and the buckets (start, tally) from first to last.

        The smallest size of `_BUCKETS` that draws the time span in at most `_MAX_COLUMNS`
        columns: seconds for a log of a minute, minutes for an hour, days for a month.
        """
        if not self.slots:
            return 60, []
        lo, hi = min(self.slots) * self.resolution, max(self.slots) * self.resolution
        size = max(_bucket_size(hi - lo), self.resolution)
        start = lo - lo % size
        buckets = [Tally() for _ in range((hi - start) // size + 1)]
        for key, tally in self.slots.items():
            _merge(buckets[(key * self.resolution - start) // size], tally)
        return size, [(start + i * size, b) for i, b in enumerate(buckets)]

    def as_dict(self) -> dict[str, Any]:
        size, buckets = self.timeline()
        return {
            "sources": self.sources,
            "lines": self.lines,
            "requests": self.requests,
            "malformed": {"count": self.malformed, "examples": self.malformed_samples},
            "incomplete_last_lines": self.incomplete,
            "time_range": {
                "first": _iso(self.first),
                "last": _iso(self.last),
                "seconds": _span(self.first, self.last),
            },
            "actions": dict(self.actions.most_common()),
            "rules": {
                rule: {"requests": n, "edits": self.edits[rule]}
                for rule, n in self.rules.most_common()
            },
            "hosts": _top_tallies(self.hosts, "host", self.top),
            "distinct_hosts": len(self.hosts),
            "clients": _top_tallies(self.clients, "client", self.top),
            "distinct_clients": len(self.clients),
            "backends": [
                {
                    "server": server,
                    "requests": n,
                    "climbing": self.backends_climbing[server],
                    "examples": self.backend_examples.get(server, []),
                }
                for server, n in self.backends.most_common()
            ],
            "findings": [k.as_dict(rule) for rule, k in self.findings_ranked()[: self.top]],
            "distinct_findings": len(self.kinds),
            "min_severity": self.min_severity,
            "severities": {
                sev: self.severities[sev]
                for sev in reversed(taxonomy.SEVERITIES)
                if self.severities[sev]
            },
            "targets": [
                {
                    "severity": sev,
                    "requests": self.targets[sev],
                    "answered_2xx": self.targets_2xx[sev],
                    "examples": self.target_requests.get(sev, []),
                }
                for sev in reversed(taxonomy.SEVERITIES)
                if self.targets[sev]
            ],
            "suspicious_answered_2xx": {
                "severity": SUSPICIOUS,
                "requests": self.suspicious_2xx,
                "examples": self.suspicious_ranked(),
                "with_status": self.with_status,
            },
            "timeline": {
                "bucket_seconds": size,
                "buckets": [
                    {"start": _iso(datetime.fromtimestamp(t, UTC)), **b.as_dict()}
                    for t, b in buckets
                ],
            },
        }


def _occurrence(
    record: dict[str, Any], finding: dict[str, Any], host: str, sev: str
) -> dict[str, Any]:
    """One request of a finding, for the drill-down: ``offsets`` where its occurrences are when
    there were several (a record written before findings had them has none)."""
    status = record.get("status")
    offsets = finding.get("offsets")
    return {
        "ts": _text(record.get("ts"), ""),
        "client": _text(record.get("client"), ""),
        "method": _text(record.get("method"), ""),
        "host": host,
        "before": _text(record.get("before"), ""),
        "component": _text(finding.get("component"), ""),
        "offset": finding.get("offset") if type(finding.get("offset")) is int else None,
        "offsets": [o for o in offsets if type(o) is int][:16] if isinstance(offsets, list) else [],
        "detail": _text(finding.get("detail"), ""),
        "severity": sev,
        "reason": _text(record.get("severity_reason"), ""),
        "status": status if type(status) is int else None,
    }


def _bucket_size(span: int) -> int:
    return next((b for b in _BUCKETS if span // b < _MAX_COLUMNS), _BUCKETS[-1])


_decode = json.JSONDecoder().decode  # what json.loads runs, with its default arguments


def _loads(line: bytes) -> Any:
    """``json.loads(line)``, without its test of the encoding where the line starts with "{"
    and a byte that is not NUL: ``json.detect_encoding`` then says UTF-8, and ``json.loads``
    decodes it with ``surrogatepass`` as this does."""
    if line[0] == 0x7B and line[1:2] != b"\x00":
        return _decode(line.decode("utf-8", "surrogatepass"))
    return json.loads(line)


def _merge(into: Tally, tally: Tally) -> None:
    into.requests += tally.requests
    into.changed += tally.changed
    into.rejected += tally.rejected


def _text(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _host_key(host: Any, scheme: Any) -> str:
    """One host is one row: case folded, and a default port dropped (":80" for http, ":443" for
    https, either when the record names no scheme)."""
    if not isinstance(host, str) or not host:
        return "(none)"
    key = host.lower()
    if isinstance(scheme, str) and scheme.lower() in _DEFAULT_PORTS:
        ports: tuple[str, ...] = (_DEFAULT_PORTS[scheme.lower()],)
    else:
        ports = _ANY_DEFAULT_PORT
    for port in ports:
        if key.endswith(port):
            return key[: -len(port)]
    return key


def _client_address(client: Any) -> str:
    """``"ip:port"`` → ``"ip"``: one client is one address, whatever its source ports."""
    if not isinstance(client, str) or not client:
        return "(none)"
    if client.startswith("["):  # [v6]:port
        return client[1 : client.find("]")] if "]" in client else client
    if client.count(":") == 1:
        return client.split(":", 1)[0]
    return client  # a bare IPv6 address, or no port


def _iso(ts: datetime | None) -> str | None:
    """RFC 3339 UTC to the second: a report's reader needs no microseconds."""
    return None if ts is None else ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def _span(first: datetime | None, last: datetime | None) -> float | None:
    return None if first is None or last is None else (last - first).total_seconds()


def _top_tallies(tallies: dict[str, Tally], key: str, top: int) -> list[dict[str, Any]]:
    ranked = sorted(tallies.items(), key=lambda kv: (-kv[1].requests, kv[0]))[:top]
    return [{key: name, **tally.as_dict()} for name, tally in ranked]


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    parts = [f"{d}d"] * bool(d) + [f"{h}h"] * bool(h) + [f"{m}m"] * bool(m)
    parts += [f"{s}s"] * bool(s or not parts)  # "1m", not "1m 0s"; "0s" for no time at all
    return " ".join(parts[:2])


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural but for one: "1 host", "2 hosts", "1,024 requests"."""
    return f"{n:,} {noun}{'s' * (n != 1)}"


def pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "-"
