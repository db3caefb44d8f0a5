"""`urlsan report`'s terminal tables, drawn from `Summary.as_dict`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .summary import Summary, counted, duration, pct

_SHOWN_IN_TEXT = 3  # requests, hosts and clients per finding kind in the terminal's drill-down


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
        out.append(f"  from {tr['first']} to {tr['last']} ({duration(tr['seconds'])})")
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
        [(a, f"{n:,}", pct(n, total)) for a, n in summary.actions.most_common()],
    )
    out += _table(
        "Rules",
        ("rule", "requests", "edits", "share"),
        [
            (r, f"{n:,}", f"{summary.edits[r]:,}", pct(n, total))
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
    out += _targets_text(summary, d)
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
        title = (
            f"Suspicious requests (a target of {sus['severity']} severity or above, the most "
            f"severe first) answered 2xx: {sus['requests']:,}"
        )
        out += _requests_table(title, sus["examples"][: _SHOWN_IN_TEXT * 3])
    if d["findings"]:
        out.append("Findings drill-down (first requests; --json has them all, up to 20 a kind)")
    kept = {
        f["rule"]: [
            (
                _clip(r["ts"], 24),
                _clip(r["client"], 22),
                "-" if r["status"] is None else str(r["status"]),
                _clip(r["method"] + " " + r["host"] + " " + r["before"], 70),
            )
            for r in f["occurrences"][:_SHOWN_IN_TEXT]
        ]
        for f in d["findings"]
    }
    # One table for every kind's requests, so that their columns line up across kinds.
    lines = iter(_table("", ("",) * 4, [r for rows in kept.values() for r in rows], "llrl")[2:])
    for f in d["findings"]:
        hosts = ", ".join(f"{_clip(h, 30)} {n:,}" for h, n in list(f["hosts"].items())[:3])
        clients = ", ".join(f"{_clip(c, 22)} {n:,}" for c, n in list(f["clients"].items())[:3])
        out.append(
            f"  {f['rule']} ({f['severity']}): {counted(f['distinct_hosts'], 'host')}: {hosts}"
        )
        out.append(f"    {counted(f['distinct_clients'], 'client')}: {clients}")
        out += [f"  {next(lines)}" for _ in kept[f["rule"]]]
    return out


def _requests_table(title: str, requests: list[dict[str, Any]]) -> list[str]:
    """Requests in aligned columns: time, client, status, the target's severity, the request
    and why the target is that severe (the record's ``severity_reason``)."""
    rows = [
        (
            _clip(r["ts"], 24),
            _clip(r["client"], 22),
            "-" if r["status"] is None else str(r["status"]),
            r["severity"],
            _clip(r["method"] + " " + r["host"] + " " + r["before"], 60),
            _clip(r.get("reason", ""), 110),
        )
        for r in requests
    ]
    header = ("time", "client", "status", "severity", "request", "reason")
    return _table(title, header, rows, align="llrlll")


def _targets_text(summary: Summary, d: dict[str, Any]) -> list[str]:
    """Requests with findings by their target's severity (what the worst reader makes of the
    target), the most severe first, each with its first request and why."""
    least = f", {summary.min_severity} and above" if summary.min_severity != "info" else ""
    rows = [
        (
            t["severity"],
            f"{t['requests']:,}",
            f"{t['answered_2xx']:,}",
            _clip(first["method"] + " " + first["host"] + " " + first["before"], 50),
            _clip(first.get("reason", ""), 110),
        )
        for t in d["targets"]
        for first in t["examples"][:1]
    ]
    return _table(
        f"Targets by severity (what the worst reader makes of them{least}; the first of each)",
        ("severity", "requests", "2xx", "first request", "reason"),
        rows,
        align="lrrll",
    )
