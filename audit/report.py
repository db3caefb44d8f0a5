"""`urlsan report`: one pass over audit logs (JSON Lines written by the proxy), then a summary as
a terminal table, JSON, or one self-contained HTML page with inline SVG charts.

Memory grows with the number of distinct hosts, clients and rules, never with the number of
lines: the timeline keeps at most a few hundred time slots, coarsened as the time span grows.  A log
that is still being written is fine: an unparsable last line without its newline is taken as the
record being written and left out, not counted as malformed.  A file most of whose lines are not
audit records (JSON objects with an ``action``) is not an audit log: `Summary.not_audit_logs`
names it, and ``urlsan report`` refuses it rather than report "0 requests".

Findings are shown by severity (a record written before findings carried one gets it from
`urlsan.core.taxonomy`), with the weaknesses each points at, the requests answered 2xx, and a
drill-down: per finding kind, the first requests (`_MAX_REQUESTS`) and the hosts and clients
that sent it (counted for the first `_MAX_DISTINCT` of each).

Everything in a log came from the network, so the HTML escapes every string it shows.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from ..core import taxonomy
from ..core.policy import DEFAULT_PORTS
from ..core.result import rule_names
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
_SHOWN_IN_TEXT = 3  # requests, hosts and clients per finding kind in the terminal's drill-down
SUSPICIOUS = "medium"  # the least severity of a suspicious request (answered 2xx, ...)


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

    def add(self, action: str) -> None:
        self.requests += 1
        if action in CHANGING:
            self.changed += 1
        elif action == "rejected":
            self.rejected += 1

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "changed": self.changed, "rejected": self.rejected}


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
    suspicious_2xx: int = 0  # records with a finding of SUSPICIOUS or above, answered 2xx
    suspicious_2xx_requests: list[dict[str, Any]] = field(default_factory=list)
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

    def read(self, stream: IO[bytes], name: str) -> None:
        """Add every record of the log ``stream`` (binary), called ``name`` in messages."""
        self.sources.append(name)
        records = foreign = number = 0
        for number, raw in enumerate(stream, 1):
            self.lines += 1
            line = raw.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict) or "action" not in record:
                    raise ValueError("not an audit record")
            except ValueError:
                # Only the last line can lack its newline: the writer may be in the middle of
                # this record, if it is the start of one (a binary file is not).
                if not raw.endswith(b"\n") and line.startswith(b"{") and line.isascii():
                    self.incomplete += 1
                else:
                    foreign += 1
                    self._malformed(f"{name}:{number}")
                continue
            records += 1
            self.add(record)
        # Not an audit log: no record at all, or more lines that are not records than that are
        # (a binary file, another JSON Lines file, a HAR or access log given to the wrong command).
        if foreign > records:
            self.not_audit_logs.append((name, number, foreign, records))

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
        self.clients.setdefault(_client_address(record.get("client")), Tally()).add(action)

        edits = record.get("edits")
        if isinstance(edits, list):
            fired = [e.get("rule") for e in edits if isinstance(e, dict)]
            # An edit core folded names each of its rules ("a+b"): each counts.
            fired_text = [n for r in fired if isinstance(r, str) for n in rule_names(r)]
            self.edits.update(fired_text)
            self.rules.update(set(fired_text))
        findings = record.get("findings")
        if isinstance(findings, list) and findings:
            self._add_findings(record, findings, host)
        readings = record.get("backends")
        if isinstance(readings, list) and readings:
            self._add_backends(record, readings, action)

        ts = parse_time(record.get("ts"))
        if ts is not None:
            wider = False
            if self.first is None or ts < self.first:
                self.first, wider = ts, True
            if self.last is None or ts > self.last:
                self.last, wider = ts, True
            if wider and self.resolution < _MAX_RESOLUTION:
                self._coarsen()
            second = math.floor(ts.timestamp())
            self.slots.setdefault(second // self.resolution, Tally()).add(action)

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

    def _add_findings(self, record: dict[str, Any], findings: list[Any], host: str) -> None:
        """The findings of one record: counted per kind, its request kept for the drill-down
        (the first `_MAX_REQUESTS` per kind), and whether a suspicious request got a 2xx."""
        status = record.get("status")
        ok = type(status) is int and 200 <= status < 300
        client = _client_address(record.get("client"))
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
        if ok and top >= taxonomy.rank(SUSPICIOUS) and top >= least:
            self.suspicious_2xx += 1
            if len(self.suspicious_2xx_requests) < _MAX_REQUESTS:
                worst = max(
                    (f for f in findings if isinstance(f, dict)),
                    key=lambda f: taxonomy.rank(_severity_of(f)),
                )
                self.suspicious_2xx_requests.append(
                    _occurrence(record, worst, host, taxonomy.SEVERITIES[top])
                )

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
            "suspicious_answered_2xx": {
                "severity": SUSPICIOUS,
                "requests": self.suspicious_2xx,
                "examples": self.suspicious_2xx_requests,
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
        "status": status if type(status) is int else None,
    }


def _bucket_size(span: int) -> int:
    return next((b for b in _BUCKETS if span // b < _MAX_COLUMNS), _BUCKETS[-1])


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


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    parts = [f"{d}d"] * bool(d) + [f"{h}h"] * bool(h) + [f"{m}m"] * bool(m)
    parts += [f"{s}s"] * bool(s or not parts)  # "1m", not "1m 0s"; "0s" for no time at all
    return " ".join(parts[:2])


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "-"


# --- terminal


def _table(
    title: str, header: tuple[str, ...], rows: Sequence[tuple[str, ...]], align: str = ""
) -> list[str]:
    """Columns aligned left ("l") or right ("r"); by default the first left, the rest right."""
    if not rows:
        return [title, "  (none)", ""]
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(row: tuple[str, ...]) -> str:
        cells = [
            c.ljust(w) if a == "l" else c.rjust(w)
            for c, w, a in zip(row, widths, align, strict=True)
        ]
        return "  " + "  ".join(cells).rstrip()

    return [title, fmt(header), *(fmt(r) for r in rows), ""]


def _clip(text: str, width: int = 60) -> str:
    text = text.encode("ascii", "backslashreplace").decode()  # no terminal escapes from the log
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def render_text(summary: Summary) -> str:
    d = summary.as_dict()
    total = summary.requests
    out = [f"urlsan report: {', '.join(summary.sources)}"]
    out.append(
        f"  {total:,} request{'s' * (total != 1)} in {summary.lines:,} "
        f"line{'s' * (summary.lines != 1)}"
    )
    tr = d["time_range"]
    if tr["first"]:
        out.append(f"  from {tr['first']} to {tr['last']} ({_duration(tr['seconds'])})")
    if summary.malformed:
        out.append(
            f"  {summary.malformed:,} malformed lines left out, e.g. "
            f"{', '.join(summary.malformed_samples)}"
        )
    if summary.incomplete:
        out.append("  the last line is still being written: left out")
    out.append("")
    out += _table(
        "Actions",
        ("action", "requests", "share"),
        [(a, f"{n:,}", _pct(n, total)) for a, n in summary.actions.most_common()],
    )
    out += _table(
        "Rules",
        ("rule", "requests", "edits", "share"),
        [
            (r, f"{n:,}", f"{summary.edits[r]:,}", _pct(n, total))
            for r, n in summary.rules.most_common()
        ],
    )
    for key, title, distinct in (
        ("hosts", "Hosts", "distinct_hosts"),
        ("clients", "Clients", "distinct_clients"),
    ):
        rows = [
            (
                _clip(h[key[:-1]], 40),
                f"{h['requests']:,}",
                f"{h['changed']:,}",
                f"{h['rejected']:,}",
            )
            for h in d[key]
        ]
        shown = f" (top {len(rows)} of {d[distinct]:,})" if d[distinct] > len(rows) else ""
        out += _table(f"{title}{shown}", (key[:-1], "requests", "changed", "rejected"), rows)
    out += _backends_text(d)
    out += _findings_text(summary, d)
    return "\n".join(out).rstrip() + "\n"


def _backends_text(d: dict[str, Any]) -> list[str]:
    """Per protected server: the requests it would route otherwise than RFC 3986, with the
    first of them (the target, then the server's path and RFC 3986's)."""
    if not d["backends"]:
        return []
    rows = [(b["server"], f"{b['requests']:,}", f"{b['climbing']:,}") for b in d["backends"]]
    out = _table("Read otherwise by the servers behind", ("server", "requests", "climbing"), rows)
    for b in d["backends"]:
        for e in b["examples"]:
            out.append(
                f"  {b['server']}: {_clip(e['before'])} -> {_clip(e['path'], 40)} "
                f"(RFC 3986: {_clip(e['rfc'], 40)}; {e['action']})"
            )
    return [*out, ""] if any(b["examples"] for b in d["backends"]) else out


def _findings_text(summary: Summary, d: dict[str, Any]) -> list[str]:
    """The findings table (most severe first), the suspicious requests answered 2xx, and the
    drill-down: each kind's first requests, hosts and clients."""
    shown = f" (top {len(d['findings'])} of {d['distinct_findings']:,})"
    shown = shown if d["distinct_findings"] > len(d["findings"]) else ""
    least = f", {summary.min_severity} and above" if summary.min_severity != "info" else ""
    out = _table(
        f"Findings{shown}{least}",
        ("finding", "severity", "count", "requests", "2xx", "weaknesses", "example"),
        [
            (
                f["rule"],
                f["severity"],
                f"{f['count']:,}",
                f"{f['requests']:,}",
                f"{f['answered_2xx']:,}",
                " ".join(w["id"] for w in f["weaknesses"]),
                _clip(f["example"].get("before") or f["example"].get("detail", ""), 40),
            )
            for f in d["findings"]
        ],
        align="llrrrll",
    )
    sus = d["suspicious_answered_2xx"]
    if sus["with_status"]:
        out.append(
            f"Suspicious requests (a finding of {sus['severity']} severity or above) answered "
            f"2xx: {sus['requests']:,}"
        )
        out += [
            f"  {_clip(r['ts'], 24)}  {_clip(r['client'], 22)}  {r['status']}  {r['severity']}  "
            f"{_clip(r['host'] + ' ' + r['before'], 70)}"
            for r in sus["examples"][: _SHOWN_IN_TEXT * 3]
        ]
        out.append("")
    if d["findings"]:
        out.append("Findings drill-down (first requests; --json has them all, up to 20 a kind)")
    for f in d["findings"]:
        hosts = ", ".join(f"{_clip(h, 30)} {n:,}" for h, n in list(f["hosts"].items())[:3])
        clients = ", ".join(f"{_clip(c, 22)} {n:,}" for c, n in list(f["clients"].items())[:3])
        out.append(f"  {f['rule']} ({f['severity']}): {f['distinct_hosts']:,} hosts: {hosts}")
        out.append(f"    {f['distinct_clients']:,} clients: {clients}")
        for r in f["occurrences"][:_SHOWN_IN_TEXT]:
            status = "-" if r["status"] is None else str(r["status"])
            out.append(
                f"    {_clip(r['ts'], 24)}  {_clip(r['client'], 22)}  {status}  "
                f"{_clip(r['method'] + ' ' + r['host'] + ' ' + r['before'], 70)}"
            )
    return out


# --- HTML

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1100px;
 padding:0 1rem;color:#1f2328;background:#fff}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.1rem;margin:2rem 0 .5rem}
.meta{color:#59636e}.cards{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}
.card{border:1px solid #d1d9e0;border-radius:8px;padding:.6rem 1rem;min-width:9rem}
.card b{display:block;font-size:1.4rem}.grid{display:grid;grid-template-columns:1fr 1fr;gap:2rem}
@media (max-width:800px){.grid{grid-template-columns:1fr}}
table{border-collapse:collapse;width:100%}td,th{padding:.25rem .5rem;border-bottom:1px solid #eee;
 text-align:left;vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
svg text{font:12px system-ui,sans-serif;fill:#1f2328}.legend span{margin-right:1rem}
.sev-critical,.sev-high{color:#D55E00;font-weight:600}.sev-medium{color:#B8860B}
details{margin:.3rem 0}summary{cursor:pointer}
.sw{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;
 vertical-align:-1px}
"""
# Colorblind-safe (Okabe–Ito): changed, rejected, other.
_C_CHANGED, _C_REJECTED, _C_OTHER, _C_BAR = "#0072B2", "#D55E00", "#B8C4CE", "#0072B2"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _bars(rows: list[tuple[str, list[tuple[int, str]]]], width: int = 520) -> str:
    """A horizontal (stacked) bar chart: label, then (value, color) segments."""
    if not rows:
        return '<p class="meta">nothing to show</p>'
    label_w, row_h = 190, 22
    peak = max(sum(v for v, _ in segs) for _, segs in rows) or 1
    plot_w = width - label_w - 70
    h = row_h * len(rows) + 4
    parts = [f'<svg viewBox="0 0 {width} {h}" width="100%" role="img">']
    for i, (label, segs) in enumerate(rows):
        y = i * row_h + 2
        shown = label if len(label) <= 28 else label[:27] + "…"
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">'
            f"<title>{_e(label)}</title>{_e(shown)}</text>"
        )
        x = float(label_w)
        for value, color in segs:
            w = plot_w * value / peak
            if w > 0:
                parts.append(
                    f'<rect x="{x:.1f}" y="{y + 3}" width="{max(w, 1):.1f}" '
                    f'height="{row_h - 6}" fill="{color}" rx="2">'
                    f"<title>{_e(label)}: {value:,}</title></rect>"
                )
            x += w
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 15}">{sum(v for v, _ in segs):,}</text>')
    parts.append("</svg>")
    return "".join(parts)


_LABEL_CHAR = 7.0  # the widest a character of a 12px axis label is drawn, in SVG units


def _axis_labels(
    size: int, buckets: list[tuple[int, Tally]], left: int, col_w: float, width: int, y: int
) -> list[str]:
    """The time axis: about eight labels, the first (and each new day's) with its date, none
    drawn over the one before it or past the chart's right edge."""
    clock = "%H:%M:%S" if size < 60 else "%H:%M"  # seconds only where buckets are seconds
    every = max(1, len(buckets) // 8)
    free = 0.0  # where the last label ends
    out = []
    for i, (t, _) in enumerate(buckets):
        x = left + i * col_w
        if i % every or x < free:
            continue
        when = datetime.fromtimestamp(t, UTC)
        fmt = clock if size < 86400 else "%m-%d"
        if i == 0 or size >= 86400 or (when.hour == 0 and when.minute == 0 and t % 60 == 0):
            fmt = f"%m-%d {clock}" if size < 86400 else "%Y-%m-%d"
        label = when.strftime(fmt)
        end = x + _LABEL_CHAR * len(label)
        if end > width:
            break  # it would run off the chart
        out.append(f'<text x="{x:.1f}" y="{y}">{label}</text>')
        free = end + 8
    return out


def _columns(size: int, buckets: list[tuple[int, Tally]], width: int = 1060) -> str:
    """Requests over time, stacked: changed, rejected, the rest."""
    if not buckets:
        return '<p class="meta">no timestamps</p>'
    left, bottom, top, h = 56, 26, 8, 220
    plot_w, plot_h = width - left - 10, h - bottom - top
    peak = max(b.requests for _, b in buckets) or 1
    magnitude = 10 ** math.floor(math.log10(peak))
    step = next(m * magnitude for m in (0.1, 0.2, 0.5, 1, 2, 5, 10) if peak / (m * magnitude) <= 5)
    ticks = list(range(0, peak + 1, max(int(step), 1)))
    col_w = plot_w / len(buckets)
    parts = [f'<svg viewBox="0 0 {width} {h}" width="100%" role="img">']
    for v in ticks:
        y = top + plot_h - plot_h * v / peak
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#eee"/><text x="{left - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{v:,}</text>'
        )
    for i, (t, b) in enumerate(buckets):
        x = left + i * col_w
        y = float(top + plot_h)
        when = datetime.fromtimestamp(t, UTC)
        clock = "%H:%M:%S" if size < 60 else "%H:%M"  # seconds only where buckets are seconds
        stamp = when.strftime(f"%Y-%m-%d {clock}")
        tip = (
            f"{stamp} UTC (+{_duration(size)}): {b.requests:,} requests, {b.changed:,} "
            f"changed, {b.rejected:,} rejected"
        )
        other = b.requests - b.changed - b.rejected
        parts.append(f"<g><title>{_e(tip)}</title>")
        for value, color in ((b.changed, _C_CHANGED), (b.rejected, _C_REJECTED), (other, _C_OTHER)):
            if value <= 0:
                continue
            bh = plot_h * value / peak
            y -= bh
            parts.append(
                f'<rect x="{x + 0.5:.1f}" y="{y:.1f}" width="{max(col_w - 1, 1):.1f}" '
                f'height="{bh:.1f}" fill="{color}"/>'
            )
        parts.append("</g>")
    parts += _axis_labels(size, buckets, left, col_w, width, h - 8)
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    return (
        '<p class="legend">'
        f'<span><i class="sw" style="background:{_C_CHANGED}"></i>changed</span>'
        f'<span><i class="sw" style="background:{_C_REJECTED}"></i>rejected</span>'
        f'<span><i class="sw" style="background:{_C_OTHER}"></i>left alone</span></p>'
    )


def _tally_segments(t: dict[str, int]) -> list[tuple[int, str]]:
    other = t["requests"] - t["changed"] - t["rejected"]
    return [(t["changed"], _C_CHANGED), (t["rejected"], _C_REJECTED), (other, _C_OTHER)]


def _weaknesses_html(f: dict[str, Any]) -> str:
    """The weakness ids, each with its definition's address as a tooltip: the page is
    self-contained and links nowhere."""
    return " ".join(
        f'<abbr title="{_e(w["source"])}">{_e(w["id"])}</abbr>' if w["source"] else _e(w["id"])
        for w in f["weaknesses"]
    )


def _occurrences_html(rows: list[dict[str, Any]]) -> str:
    out = [
        "<table><tr><th>time</th><th>client</th><th class=n>status</th><th>severity</th>"
        "<th>request</th></tr>"
    ]
    for r in rows:
        status = "" if r["status"] is None else str(r["status"])
        out.append(
            f"<tr><td>{_e(r['ts'])}</td><td>{_e(r['client'])}</td><td class=n>{_e(status)}</td>"
            f"<td>{_e(r['severity'])}</td><td>{_e(r['method'])} {_e(r['host'])} "
            f"<code>{_e(r['before'])}</code><br><span class=meta>{_e(r['component'])} · "
            f"{_e(r['detail'])}</span></td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _findings_html(summary: Summary, d: dict[str, Any]) -> list[str]:
    """The findings table, most severe first, each kind with its drill-down; the suspicious
    requests answered 2xx."""
    least = (
        f" (severity {summary.min_severity} and above)" if summary.min_severity != "info" else ""
    )
    p = [f"<h2>Findings{_e(least)}</h2>"]
    if not d["findings"]:
        return [*p, '<p class="meta">none</p>']
    p.append(
        "<table><tr><th>finding</th><th>severity</th><th class=n>count</th>"
        "<th class=n>requests</th><th class=n>2xx</th><th>weaknesses</th><th>example</th></tr>"
    )
    for f in d["findings"]:
        ex = f["example"]
        p.append(
            f"<tr><td>{_e(f['rule'])}</td><td class=sev-{_e(f['severity'])}>{_e(f['severity'])}"
            f"</td><td class=n>{f['count']:,}</td><td class=n>{f['requests']:,}</td>"
            f"<td class=n>{f['answered_2xx']:,}</td><td>{_weaknesses_html(f)}</td>"
            f"<td><code>{_e(ex.get('before', ''))}</code><br><span class=meta>"
            f"{_e(ex.get('host', ''))} · {_e(ex.get('component', ''))} · "
            f"{_e(ex.get('detail', ''))}</span></td></tr>"
        )
    p.append("</table>")
    sus = d["suspicious_answered_2xx"]
    if sus["with_status"]:
        p.append(
            f"<h2>Suspicious requests answered 2xx <span class=meta>(a finding of "
            f"{_e(sus['severity'])} severity or above: {sus['requests']:,})</span></h2>"
        )
        p.append(
            _occurrences_html(sus["examples"]) if sus["examples"] else "<p class=meta>none</p>"
        )
    p.append("<h2>Findings drill-down</h2>")
    for f in d["findings"]:
        hosts = ", ".join(f"{_e(h)} ({n:,})" for h, n in f["hosts"].items())
        clients = ", ".join(f"{_e(c)} ({n:,})" for c, n in f["clients"].items())
        p.append(
            f"<details><summary>{_e(f['rule'])} · {_e(f['severity'])} · "
            f"{f['requests']:,} requests</summary>"
            f"<p class=meta>{f['distinct_hosts']:,} hosts: {hosts}<br>"
            f"{f['distinct_clients']:,} clients: {clients}</p>"
            f"{_occurrences_html(f['occurrences'])}</details>"
        )
    return p


def _backends_html(d: dict[str, Any]) -> list[str]:
    if not d["backends"]:
        return []
    p = [
        "<h2>Read otherwise by the servers behind</h2><table><tr><th>server</th>"
        "<th class=n>requests</th><th class=n>climbing</th><th>for example</th></tr>"
    ]
    for b in d["backends"]:
        shown = "<br>".join(
            f"<code>{_e(e['before'])}</code> → <code>{_e(e['path'])}</code> "
            f"(RFC 3986: <code>{_e(e['rfc'])}</code>; {_e(e['action'])})"
            for e in b["examples"]
        )
        p.append(
            f"<tr><td>{_e(b['server'])}</td><td class=n>{b['requests']:,}</td>"
            f"<td class=n>{b['climbing']:,}</td><td>{shown}</td></tr>"
        )
    p.append("</table>")
    return p


def render_html(summary: Summary) -> str:
    d = summary.as_dict()
    total = summary.requests
    tr = d["time_range"]
    changed = sum(n for a, n in summary.actions.items() if a in CHANGING)
    size, buckets = summary.timeline()
    cards = [
        ("requests", f"{total:,}"),
        ("changed", f"{changed:,} ({_pct(changed, total)})"),
        ("rejected", f"{summary.actions['rejected']:,}"),
        ("hosts", f"{d['distinct_hosts']:,}"),
        ("clients", f"{d['distinct_clients']:,}"),
        ("findings", f"{sum(summary.findings.values()):,}"),
    ]
    p: list[str] = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>urlsan report: {_e(', '.join(summary.sources))}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>urlsan audit report</h1>",
        f'<p class="meta">{_e(", ".join(summary.sources))}',
    ]
    if tr["first"]:
        p.append(f" · {_e(tr['first'])} to {_e(tr['last'])} ({_e(_duration(tr['seconds']))})")
    if summary.malformed:
        p.append(f" · {summary.malformed:,} malformed lines left out")
    if summary.incomplete:
        p.append(" · last line still being written, left out")
    p.append("</p><div class=cards>")
    p += [f"<div class=card>{_e(k)}<b>{_e(v)}</b></div>" for k, v in cards]
    p.append("</div>")

    p.append(f"<h2>Requests over time <span class=meta>(per {_duration(size)})</span></h2>")
    p.append(_legend() + _columns(size, buckets))

    p.append("<div class=grid><div><h2>Rewrites per rule</h2>")
    p.append(_bars([(r, [(n, _C_BAR)]) for r, n in summary.rules.most_common()]))
    p.append("</div><div><h2>Actions</h2>")
    colors = {"rejected": _C_REJECTED, **dict.fromkeys(CHANGING, _C_CHANGED)}
    p.append(_bars([(a, [(n, colors.get(a, _C_OTHER))]) for a, n in summary.actions.most_common()]))
    p.append("</div></div>")

    p.append("<div class=grid><div><h2>Hosts</h2>" + _legend())
    p.append(_bars([(h["host"], _tally_segments(h)) for h in d["hosts"]]))
    p.append("</div><div><h2>Clients</h2>" + _legend())
    p.append(_bars([(c["client"], _tally_segments(c)) for c in d["clients"]]))
    p.append("</div></div>")

    p += _backends_html(d)
    p += _findings_html(summary, d)

    p.append(
        "<h2>Rules</h2><table><tr><th>rule</th><th class=n>requests</th><th class=n>edits</th></tr>"
    )
    p += [
        f"<tr><td>{_e(r)}</td><td class=n>{v['requests']:,}</td><td class=n>{v['edits']:,}"
        "</td></tr>"
        for r, v in d["rules"].items()
    ]
    p.append("</table>")
    p.append('<p class="meta">made by <code>urlsan report --html</code></p></body></html>\n')
    return "".join(p)
