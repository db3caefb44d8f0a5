"""`urlsan report --html`: one self-contained page (inline CSS and SVG charts, no script),
drawn from `Summary.as_dict`.  Everything in a log came from the network, so the page escapes
every string it shows."""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime
from typing import Any

from .record import CHANGING
from .summary import Summary, Tally, counted, duration, pct

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
            f"{stamp} UTC (+{duration(size)}): {b.requests:,} requests, {b.changed:,} "
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


def _reason_html(r: dict[str, Any]) -> str:
    """Why the target is as severe as it is (the record's ``severity_reason``), when known."""
    return f"<br>{_e(r['reason'])}" if r.get("reason") else ""


def _targets_html(summary: Summary, d: dict[str, Any]) -> list[str]:
    """Requests with findings by their target's severity, the most severe first, each with its
    first request and why."""
    if not d["targets"]:
        return []
    least = f", {summary.min_severity} and above" if summary.min_severity != "info" else ""
    p = [
        f"<h2>Targets by severity <span class=meta>(what the worst reader makes of them"
        f"{_e(least)})</span></h2>",
        "<table><tr><th>severity</th><th class=n>requests</th><th class=n>2xx</th>"
        "<th>first request, and why</th></tr>",
    ]
    for t in d["targets"]:
        first = t["examples"][0] if t["examples"] else {}
        p.append(
            f"<tr><td class=sev-{_e(t['severity'])}>{_e(t['severity'])}</td>"
            f"<td class=n>{t['requests']:,}</td><td class=n>{t['answered_2xx']:,}</td>"
            f"<td>{_e(first.get('method', ''))} {_e(first.get('host', ''))} "
            f"<code>{_e(first.get('before', ''))}</code><span class=meta>"
            f"{_reason_html(first)}</span></td></tr>"
        )
    p.append("</table>")
    return p


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
            f"{_e(r['detail'])}{_reason_html(r)}</span></td></tr>"
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
            f"<h2>Suspicious requests answered 2xx <span class=meta>(a target of "
            f"{_e(sus['severity'])} severity or above, the most severe first: "
            f"{sus['requests']:,})</span></h2>"
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
            f"{counted(f['requests'], 'request')}</summary>"
            f"<p class=meta>{counted(f['distinct_hosts'], 'host')}: {hosts}<br>"
            f"{counted(f['distinct_clients'], 'client')}: {clients}</p>"
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
        ("changed", f"{changed:,} ({pct(changed, total)})"),
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
        p.append(f" · {_e(tr['first'])} to {_e(tr['last'])} ({_e(duration(tr['seconds']))})")
    if summary.malformed:
        p.append(f" · {summary.malformed:,} malformed lines left out")
    if summary.incomplete:
        p.append(" · last line still being written, left out")
    p.append("</p><div class=cards>")
    p += [f"<div class=card>{_e(k)}<b>{_e(v)}</b></div>" for k, v in cards]
    p.append("</div>")

    p.append(f"<h2>Requests over time <span class=meta>(per {duration(size)})</span></h2>")
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
    p += _targets_html(summary, d)
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
