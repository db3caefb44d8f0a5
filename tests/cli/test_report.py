"""`urlsan report`: one pass over audit logs; extra fields and a log being written are fine."""

from __future__ import annotations

import gzip
import itertools
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_harness import RunUrlsan

from urlsan.audit.report import Summary, render_html, render_text


def record(
    ts: str,
    action: str,
    host: str = "example.com",
    client: str = "10.0.0.1:50000",
    rules: tuple[str, ...] = (),
    findings: tuple[str, ...] = (),
    before: str = "/a",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "ts": ts,
        "client": client,
        "method": "GET",
        "scheme": "http",
        "host": host,
        "before": before,
        "after": before.lower(),
        "action": action,
        "edits": [
            {"rule": r, "component": "path", "start": 0, "end": 1, "before": "x", "after": "y"}
            for r in rules
        ],
        "findings": [
            {"rule": f, "component": "path", "offset": 3, "detail": f"{f} detail"} for f in findings
        ],
        **extra,
    }


RECORDS = [
    record("2026-11-22T04:00:05Z", "rewritten", rules=("decode-unreserved",), before="/%7Ea"),
    record(
        "2026-11-22T04:00:30.5Z",
        "rewritten",
        rules=("decode-unreserved", "decode-unreserved", "remove-dot-segments"),
        findings=("dot-segment",),
        before="/x/../%7eb",
    ),
    record("2026-11-22T04:20:00Z", "unchanged", host="b.test", client="10.0.0.2:1"),
    record(
        "2026-11-22T05:00:00+00:00",
        "rejected",
        host="b.test",
        client="[::1]:443",
        findings=("escaped-slash",),
        before="/a%2F..",
        reason="escaped slash",  # extra fields are fine
    ),
    record("2026-11-22T05:30:00Z", "audited", rules=("uppercase-escape",), client="10.0.0.1:2"),
    record("2026-11-22T05:31:00Z", "skipped-signed", host="bucket.s3.amazonaws.com"),
]


def write_log(path: Path, records: list[dict[str, Any]], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)
    return path


def test_counts(tmp_path: Path) -> None:
    log = write_log(tmp_path / "audit.jsonl", RECORDS)
    s = Summary()
    with open(log, "rb") as f:
        s.read(f, str(log))
    d = s.as_dict()
    assert d["requests"] == 6 and d["lines"] == 6
    assert d["actions"] == {
        "rewritten": 2,
        "unchanged": 1,
        "rejected": 1,
        "audited": 1,
        "skipped-signed": 1,
    }
    # Requests per rule count a request once; edits count every edit.
    assert d["rules"] == {
        "decode-unreserved": {"requests": 2, "edits": 3},
        "remove-dot-segments": {"requests": 1, "edits": 1},
        "uppercase-escape": {"requests": 1, "edits": 1},
    }
    assert d["hosts"][0] == {"host": "example.com", "requests": 3, "changed": 3, "rejected": 0}
    assert {"host": "b.test", "requests": 2, "changed": 0, "rejected": 1} in d["hosts"]
    clients = {c["client"]: c["requests"] for c in d["clients"]}
    assert clients == {"10.0.0.1": 4, "10.0.0.2": 1, "::1": 1}  # ports folded
    # Most severe first: an escaped slash (medium) before a ".." that climbs nowhere (low).
    assert [(f["rule"], f["severity"]) for f in d["findings"]] == [
        ("escaped-slash", "medium"),
        ("dot-segment", "low"),
    ]
    assert d["findings"][1]["example"]["before"] == "/x/../%7eb"
    assert d["findings"][1]["weaknesses"][0] == {
        "id": "CWE-22",
        "source": "https://cwe.mitre.org/data/definitions/22.html",
    }
    assert d["time_range"] == {
        "first": "2026-11-22T04:00:05Z",
        "last": "2026-11-22T05:31:00Z",
        "seconds": 5455.0,
    }
    timeline = d["timeline"]
    assert timeline["bucket_seconds"] == 60
    assert timeline["buckets"][0] == {
        "start": "2026-11-22T04:00:00Z",
        "requests": 2,
        "changed": 2,
        "rejected": 0,
    }
    assert sum(b["requests"] for b in timeline["buckets"]) == 6
    assert len(timeline["buckets"]) == 92


def test_a_log_still_being_written(tmp_path: Path) -> None:
    log = write_log(tmp_path / "audit.jsonl", RECORDS, tail=b'{"ts": "2026-11-22T05:32:00Z", "ac')
    s = Summary()
    with open(log, "rb") as f:
        s.read(f, str(log))
    assert (s.requests, s.malformed, s.incomplete) == (6, 0, 1)
    assert "still being written" in render_text(s)


def test_malformed_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    lines = [json.dumps(RECORDS[0]), "not json", "[1, 2]", "", json.dumps(RECORDS[1])]
    log = tmp_path / "audit.jsonl"
    log.write_text("\n".join(lines) + "\n")
    s = Summary()
    with open(log, "rb") as f:
        s.read(f, str(log))
    assert (s.requests, s.malformed, s.incomplete) == (2, 2, 0)
    assert s.malformed_samples == [f"{log}:2", f"{log}:3"]


def test_missing_and_odd_fields_do_not_stop_the_report() -> None:
    s = Summary()
    s.add({"action": 3, "edits": "x", "findings": [None, {"rule": 5}], "ts": "yesterday"})
    s.add({})
    d = s.as_dict()
    assert d["requests"] == 2 and d["actions"] == {"unknown": 2}
    assert d["time_range"]["first"] is None
    assert render_text(s) and render_html(s)


def test_timeline_buckets_grow_with_the_time_span() -> None:
    s = Summary()
    for day in range(1, 29):
        s.add(record(f"2026-02-{day:02d}T12:00:00Z", "rewritten"))
    size, buckets = s.timeline()
    assert size == 6 * 3600 and len(buckets) <= 120
    assert sum(b.requests for _, b in buckets) == 28


def test_terminal_table(urlsan: RunUrlsan, tmp_path: Path) -> None:
    log = write_log(tmp_path / "audit.jsonl", RECORDS)
    r = urlsan("report", str(log))
    assert r.status == 0
    text = r.out.decode()
    assert "6 requests in 6 lines" in text
    assert "from 2026-11-22T04:00:05Z to 2026-11-22T05:31:00Z (1h 30m)" in text
    assert re.search(r"rewritten\s+2\s+33\.3%", text)
    assert re.search(r"decode-unreserved\s+2\s+3\s+33\.3%", text)
    assert re.search(r"dot-segment\s+low\s+1\s+1\s+0\s+CWE-22 CAPEC-126\s+/x/\.\./%7eb", text)


def test_json_gzip_stdin_and_several_logs(urlsan: RunUrlsan, tmp_path: Path) -> None:
    first = write_log(tmp_path / "audit.1.jsonl", RECORDS[:3])
    second = tmp_path / "audit.2.jsonl.gz"
    second.write_bytes(gzip.compress(write_log(tmp_path / "x", RECORDS[3:]).read_bytes()))
    d = json.loads(urlsan("report", "--json", str(first), str(second)).out)
    assert d["requests"] == 6 and d["sources"] == [str(first), str(second)]
    piped = json.loads(urlsan("report", "--json", "-", stdin=second.read_bytes()).out)
    assert piped["requests"] == 3


def test_html_is_self_contained_and_escapes_the_log(urlsan: RunUrlsan, tmp_path: Path) -> None:
    evil = record(
        "2026-11-22T06:00:00Z",
        "rewritten",
        host="<script>alert(1)</script>",
        rules=('"><img src=x onerror=alert(2)>',),
        findings=("</table><script>",),
        before="/<b>",
    )
    log = write_log(tmp_path / "audit.jsonl", [*RECORDS, evil])
    out = tmp_path / "report.html"
    assert urlsan("report", "--html", "-o", str(out), str(log)).status == 0
    page = out.read_text()
    assert page.startswith("<!doctype html>") and page.count("<svg") >= 5
    assert "<script" not in page and "<img" not in page  # nothing from the log runs
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Self-contained: no scripts, stylesheets, images or fonts fetched from anywhere.
    assert not re.search(r"""<[^>]*\s(src|href)\s*=|@import|url\(""", page)
    assert "Rewrites per rule" in page and "Requests over time" in page


def test_missing_log_is_a_usage_error(urlsan: RunUrlsan) -> None:
    r = urlsan("report", "/nonexistent/audit.jsonl")
    assert r.status == 2 and "cannot read /nonexistent/audit.jsonl" in r.err


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--html"]])
def test_an_empty_log(urlsan: RunUrlsan, tmp_path: Path, fmt: list[str]) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_bytes(b"")
    assert urlsan("report", *fmt, str(log)).status == 0


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--html"]])
def test_a_file_that_is_no_audit_log(urlsan: RunUrlsan, tmp_path: Path, fmt: list[str]) -> None:
    binary = tmp_path / "ls"
    binary.write_bytes(bytes(range(11, 256)) * 40 + b"\n" * 4 + b"\x7fELF")
    r = urlsan("report", *fmt, str(binary))
    assert r.status == 3 and r.out == b""
    assert f"urlsan report: {binary} is not an audit log: none of its 5 lines" in r.err
    # Several inputs: the one that is not a log is named, and nothing is reported.
    log = write_log(tmp_path / "audit.jsonl", RECORDS)
    r = urlsan("report", *fmt, str(log), str(binary))
    assert r.status == 3 and r.out == b"" and str(log) not in r.err


def test_a_binary_without_a_newline_is_no_audit_log(urlsan: RunUrlsan, tmp_path: Path) -> None:
    # One line and no newline: not the last record of a log still being written.
    binary = tmp_path / "blob"
    binary.write_bytes(bytes(range(11, 256)) * 12)
    r = urlsan("report", str(binary))
    assert r.status == 3 and "none of its 1 line is an audit record" in r.err
    partial = tmp_path / "partial.jsonl"
    partial.write_bytes(b'{"ts":"2026-11-22T04:00:00.197Z","act')
    r = urlsan("report", str(partial))
    assert r.status == 0 and b"0 requests in 1 line\n" in r.out


def test_times_to_the_second_and_seconds_buckets(urlsan: RunUrlsan, tmp_path: Path) -> None:
    records = [
        record("2026-11-22T04:00:00.197Z", "rewritten"),
        record("2026-11-22T04:00:34.861Z", "rewritten"),
    ]
    log = write_log(tmp_path / "audit.jsonl", records)
    r = urlsan("report", str(log))
    assert "from 2026-11-22T04:00:00Z to 2026-11-22T04:00:34Z (34s)" in r.out.decode()
    d = json.loads(urlsan("report", "--json", str(log)).out)
    assert d["timeline"]["bucket_seconds"] == 1 and len(d["timeline"]["buckets"]) == 35


def finding(rule: str, detail: str, component: str = "path", **extra: Any) -> dict[str, Any]:
    return {"rule": rule, "component": component, "offset": 1, "detail": detail, **extra}


ATTACKS = [
    # A newer log: findings carry their severity, the record its status.
    {
        **record("2026-11-22T07:00:00Z", "rewritten", client="10.9.9.9:1", host="shop.test"),
        "before": "/static/%252e%252e/%252e%252e/etc/passwd",
        "findings": [
            finding("decoded-dot-segment-above-root", "/static/../../etc/passwd", "path",
                    severity="critical"),
            finding("double-encoding", "%252e", severity="medium"),
        ],
        "severity": "critical",
        "status": 200,
    },
    {
        **record("2026-11-22T07:00:01Z", "rewritten", client="10.9.9.9:2", host="shop.test"),
        "before": "/a/./b",
        "findings": [finding("dot-segment", ".", severity="info")],
        "status": 200,
    },
    # An older log: no severity anywhere, no status; the taxonomy gives the severity.
    {
        **record("2026-11-22T07:00:02Z", "rewritten", client="10.8.8.8:3", host="api.test"),
        "before": "/upload/a.php%00.png",
        "findings": [finding("nul-escape", "%00")],
    },
    {
        **record("2026-11-22T07:00:03Z", "rewritten", client="10.9.9.9:4", host="api.test"),
        "before": "/x/%252e%252e/y",
        "findings": [finding("double-encoding", "%252e", severity="medium")],
        "status": 404,
    },
]  # fmt: skip


def test_findings_by_severity_with_weaknesses_and_requests(tmp_path: Path) -> None:
    s = Summary()
    for r in ATTACKS:
        s.add(r)
    d = s.as_dict()
    assert [(f["rule"], f["severity"]) for f in d["findings"]] == [
        ("decoded-dot-segment-above-root", "critical"),
        ("nul-escape", "high"),  # from the taxonomy: the record is older than severities
        ("double-encoding", "medium"),
        ("dot-segment", "info"),
    ]
    double = d["findings"][2]
    assert (double["count"], double["requests"], double["answered_2xx"]) == (2, 2, 1)
    assert double["hosts"] == {"shop.test": 1, "api.test": 1}
    assert double["clients"] == {"10.9.9.9": 2}
    assert [r["before"] for r in double["occurrences"]] == [
        "/static/%252e%252e/%252e%252e/etc/passwd",
        "/x/%252e%252e/y",
    ]
    assert [r["status"] for r in double["occurrences"]] == [200, 404]
    assert {w["id"] for w in double["weaknesses"]} == {"CWE-174", "CAPEC-120"}
    assert d["severities"] == {"critical": 1, "high": 1, "medium": 1, "info": 1}
    # Suspicious (medium or above) and answered 2xx: the traversal, not the "./" nor the 404.
    sus = d["suspicious_answered_2xx"]
    assert sus["requests"] == 1 and sus["with_status"] == 3
    assert sus["examples"][0]["severity"] == "critical"
    assert sus["examples"][0]["client"] == "10.9.9.9:1"


def test_min_severity_and_order_by_count(urlsan: RunUrlsan, tmp_path: Path) -> None:
    log = write_log(tmp_path / "audit.jsonl", ATTACKS)
    d = json.loads(urlsan("report", "--json", "--min-severity", "high", str(log)).out)
    assert [f["rule"] for f in d["findings"]] == ["decoded-dot-segment-above-root", "nul-escape"]
    assert d["requests"] == 4  # the traffic is all counted; only the findings views filter
    d = json.loads(urlsan("report", "--json", "--findings-by", "count", str(log)).out)
    assert d["findings"][0]["rule"] == "double-encoding"
    bad = urlsan("report", "--min-severity", "severe", str(log))
    assert bad.status == 2 and "severe" in bad.err


def test_drill_down_in_text_and_html(urlsan: RunUrlsan, tmp_path: Path) -> None:
    log = write_log(tmp_path / "audit.jsonl", ATTACKS)
    text = urlsan("report", str(log)).out.decode()
    assert re.search(r"decoded-dot-segment-above-root\s+critical\s+1\s+1\s+1\s+CWE-22", text)
    assert "answered 2xx: 1" in text
    assert "double-encoding (medium): 2 hosts: shop.test 1, api.test 1" in text
    assert "GET api.test /x/%252e%252e/y" in text
    out = tmp_path / "report.html"
    assert urlsan("report", "--html", "-o", str(out), str(log)).status == 0
    page = out.read_text()
    assert "Suspicious requests answered 2xx" in page and page.count("<details>") == 4
    assert 'title="https://cwe.mitre.org/data/definitions/174.html"' in page


def test_no_status_in_the_log_says_nothing_about_2xx(urlsan: RunUrlsan, tmp_path: Path) -> None:
    log = write_log(tmp_path / "audit.jsonl", RECORDS)
    assert "answered 2xx" not in urlsan("report", str(log)).out.decode()


def test_time_axis_labels_do_not_overlap() -> None:
    # Seconds buckets starting at an odd second: the first label carries its date and is the
    # longest; the next must start after it ends (it was drawn on it: "11-27 01:31:1731:18").
    s = Summary()
    start = 1_795_743_077  # 2026-11-27T01:31:17Z
    for i in range(15):  # one column a second, one label a column: the first is the widest
        s.add({"ts": f"{datetime.fromtimestamp(start + i, UTC):%Y-%m-%dT%H:%M:%S}Z", "action": "x"})
    page = render_html(s)
    svg = page[page.index("Requests over time") :]
    svg = svg[: svg.index("</svg>")]
    labels = [
        (float(x), t) for x, t in re.findall(r'<text x="([\d.]+)" y="\d+">([^<]+)</text>', svg)
    ]
    labels = [(x, t) for x, t in labels if ":" in t]
    assert len(labels) >= 4
    assert labels[0][1] == "11-27 01:31:17"
    for (x0, t0), (x1, _) in itertools.pairwise(labels):
        assert x1 >= x0 + 7 * len(t0), (t0, x0, x1)


def test_a_gzip_log_cut_short(urlsan: RunUrlsan, tmp_path: Path) -> None:
    """A .gz copy broken off: the records before the cut are reported, and the cut is said."""
    lines = [json.dumps(record(f"2026-11-22T04:57:{i:02}Z", "audited")) for i in range(60)]
    packed = gzip.compress(("\n".join(lines) + "\n").encode())
    log = tmp_path / "audit.jsonl.gz"
    log.write_bytes(packed[: len(packed) * 3 // 4])
    r = urlsan("report", "--json", str(log))
    assert r.status == 0
    assert 0 < json.loads(r.out)["requests"] < 60
    assert f"urlsan report: {log}: the gzip data ends at uncompressed byte" in r.err


def audited(target: str, ts: str, client: str, status: int | None) -> dict[str, Any]:
    """The record the decision writes for ``target`` in audit mode (its target severity and
    reason with it), answered ``status``."""
    from urlsan.addon import decision
    from urlsan.audit.sources import Request

    settings = decision.settings(mode="audit")
    request = Request(
        None, client, "GET", "http", "shop.test", target.encode(), "HTTP/1.1", "test",
        status=status,
    )  # fmt: skip
    outcome = decision.examine(request, settings)
    assert outcome is not None
    return decision.record(request, outcome, settings, ts)


TARGETS = [
    audited("/chapter/10.1007%2F978-1-4471-6374-9_5", "2026-11-22T08:00:00Z", "10.0.0.1:1", 200),
    audited("/a//../b", "2026-11-22T08:00:01Z", "10.0.0.22:2", 200),
    audited("/.//..//etc/passwd", "2026-11-22T08:00:02Z", "[fd00::7]:3", 200),
    audited("/scripts/%u0065vil.asp", "2026-11-22T08:00:03Z", "10.0.0.1:4", 404),
    audited("/?lang=x%0d%0aSet-Cookie:%20a=b", "2026-11-22T08:00:04Z", "10.0.0.1:5", 200),
]


def test_targets_by_severity_with_the_reason(urlsan: RunUrlsan, tmp_path: Path) -> None:
    """The report ranks requests by what the worst reader makes of the target, not by the
    finding kind: the DOI's medium "%2F" is a low target, the low "//..//" a critical one."""
    log = write_log(tmp_path / "audit.jsonl", TARGETS)
    d = json.loads(urlsan("report", "--json", str(log)).out)
    assert [(t["severity"], t["requests"], t["answered_2xx"]) for t in d["targets"]] == [
        ("critical", 1, 1),
        ("high", 2, 2),
        ("medium", 1, 0),
        ("low", 1, 1),
    ]
    critical = d["targets"][0]["examples"][0]
    assert critical["before"] == "/.//..//etc/passwd"
    assert critical["reason"].endswith("reaches above the root: /../etc/passwd")
    # the suspicious requests answered 2xx, the most severe target first, with the reason
    sus = d["suspicious_answered_2xx"]
    assert [r["before"] for r in sus["examples"]] == [
        "/.//..//etc/passwd",
        "/a//../b",
        "/?lang=x%0d%0aSet-Cookie:%20a=b",
    ]
    assert "nginx climbs to /b" in sus["examples"][1]["reason"]
    # --min-severity filters the targets (and the suspicious requests) by the target's severity
    d = json.loads(urlsan("report", "--json", "--min-severity", "critical", str(log)).out)
    assert [t["severity"] for t in d["targets"]] == ["critical"]
    assert d["suspicious_answered_2xx"]["requests"] == 1
    text = urlsan("report", "--min-severity", "high", str(log)).out.decode()
    assert "Targets by severity (what the worst reader makes of them, high and above" in text
    assert "reaches above the root: /../etc/passwd" in text
    assert "no reader climbs" not in text  # the low DOI is left out
    out = tmp_path / "report.html"
    assert urlsan("report", "--html", "-o", str(out), str(log)).status == 0
    page = out.read_text()
    assert "Targets by severity" in page and "nginx climbs to /b" in page


def test_suspicious_requests_line_up_and_counts_agree(urlsan: RunUrlsan, tmp_path: Path) -> None:
    """Clients of different widths (IPv4, IPv6): every row's columns start where the header's
    do; one host and one client are "1 host", "1 client"."""
    log = write_log(tmp_path / "audit.jsonl", TARGETS)
    lines = urlsan("report", str(log)).out.decode().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Suspicious requests"))
    header = lines[start + 1]
    assert header.split() == ["time", "client", "status", "severity", "request", "reason"]
    rows = lines[start + 2 : start + 5]
    for column in ("client", "severity", "request", "reason"):
        at = header.index(column)
        assert all(row[at - 1] == " " != row[at] for row in rows), (column, rows)
    assert all(row[header.index("request") :].startswith("GET shop.test /") for row in rows)
    text = "\n".join(lines)
    assert re.search(r"\(low\): 1 host: shop\.test 1\n    1 client: 10\.0\.0\.1 1", text), text
    assert "1 hosts" not in text and "1 clients" not in text
    # the drill-down's requests line up too
    drill = [line for line in lines if line.startswith("    2026-11-22T08")]
    assert len({line.index("GET") for line in drill}) == 1


def test_an_older_log_ranks_a_target_by_its_highest_finding() -> None:
    s = Summary()
    for r in ATTACKS:  # no target_severity, no severity_reason
        s.add(r)
    d = s.as_dict()
    assert [t["severity"] for t in d["targets"]] == ["critical", "high", "medium", "info"]
    assert d["targets"][0]["examples"][0]["reason"] == ""
    assert "Targets by severity" in render_text(s) and "Targets by severity" in render_html(s)
