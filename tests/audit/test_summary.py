"""The report's timeline buckets, hosts, and its refusal of files that are not audit logs."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from urlsan.audit.report import Summary, render_html, render_text

START = datetime(2026, 11, 22, 4, 0, 0, 250000, tzinfo=UTC)


def rec(seconds: float, action: str = "rewritten", **extra: Any) -> dict[str, Any]:
    ts = (START + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
    return {"ts": ts.replace("+00:00", "Z"), "action": action, "before": "/a", **extra}


def summary(records: list[dict[str, Any]]) -> Summary:
    s = Summary()
    for r in records:
        s.add(r)
    return s


@pytest.mark.parametrize(
    ("span", "size"),
    [
        (0, 1),
        (34, 1),  # a 34-second log: one column per second, not two one-minute blocks
        (119, 1),
        (120, 5),
        (300, 5),
        (900, 10),
        (1800, 30),
        (3600, 60),
        (5 * 3600, 300),
        (24 * 3600, 900),
        (4 * 86400, 3600),
        (27 * 86400, 6 * 3600),
        (100 * 86400, 86400),
        (700 * 86400, 7 * 86400),
        (3 * 365 * 86400, 30 * 86400),
    ],
)
def test_buckets_fit_the_span(span: int, size: int) -> None:
    s = summary([rec(0), rec(span / 2), rec(span)])
    got, buckets = s.timeline()
    assert got == size
    assert 1 <= len(buckets) <= 121
    assert sum(b.requests for _, b in buckets) == 3
    assert buckets[0][0] <= START.timestamp() < buckets[0][0] + size


def test_counts_survive_coarsening_out_of_order() -> None:
    # Records out of order, and a span that grows from seconds to days: every request is kept
    # in the right bucket, and the slots stay few.
    times = [50, 3, 40000, 1, 200000, 7, 86400 * 3, 86400 * 3 + 1]
    s = summary([rec(t, "rejected" if t % 2 else "rewritten") for t in times])
    size, buckets = s.timeline()
    assert size == 3600 and len(s.slots) <= len(times)
    assert sum(b.requests for _, b in buckets) == len(times)
    assert sum(b.rejected for _, b in buckets) == 4
    first = buckets[0][1]
    assert (first.requests, first.changed, first.rejected) == (4, 1, 3)  # 1, 3, 7, 50 s


def test_a_long_log_keeps_few_slots() -> None:
    s = Summary()
    for minute in range(0, 60 * 24 * 29, 7):  # 29 days, a record every 7 minutes
        s.add(rec(minute * 60))
    assert len(s.slots) <= 300
    size, buckets = s.timeline()
    assert size == 6 * 3600 and sum(b.requests for _, b in buckets) == len(
        range(0, 60 * 24 * 29, 7)
    )


def test_times_are_shown_to_the_second() -> None:
    s = summary([rec(0.25), rec(34.5)])
    d = s.as_dict()
    assert d["time_range"]["first"] == "2026-11-22T04:00:00Z"
    assert d["time_range"]["last"] == "2026-11-22T04:00:34Z"
    assert "from 2026-11-22T04:00:00Z to 2026-11-22T04:00:34Z (34s)" in render_text(s)
    assert d["timeline"]["bucket_seconds"] == 1
    assert d["timeline"]["buckets"][1]["start"] == "2026-11-22T04:00:01Z"
    page = render_html(s)
    assert "(per 1s)" in page and "11-22 04:00:00" in page and ".250" not in page


def test_one_host_with_and_without_its_default_port() -> None:
    s = summary(
        [
            rec(0, host="Example.COM", scheme="http"),
            rec(1, host="example.com:80", scheme="http"),
            rec(2, host="example.com:443", scheme="https"),
            rec(3, host="example.com:443", scheme="http"),  # not the default port of http
            rec(4, host="example.com:8080"),
            rec(5, host="example.com:80"),  # no scheme: either default port
        ]
    )
    hosts = {h["host"]: h["requests"] for h in s.as_dict()["hosts"]}
    assert hosts == {"example.com": 4, "example.com:443": 1, "example.com:8080": 1}


def test_a_folded_edit_counts_each_of_its_rules() -> None:
    def edit(rule: str) -> dict[str, Any]:
        return {"rule": rule, "component": "path", "start": 1, "end": 2, "before": "", "after": ""}

    s = summary(
        [
            rec(0, edits=[edit("encode-unsafe"), edit("encode-stray-percent+encode-unsafe")]),
            rec(1, edits=[edit("remove-dot-segments")]),
        ]
    )
    rules = s.as_dict()["rules"]
    assert rules == {
        "encode-unsafe": {"requests": 1, "edits": 2},
        "encode-stray-percent": {"requests": 1, "edits": 1},
        "remove-dot-segments": {"requests": 1, "edits": 1},
    }
    assert "encode-stray-percent+encode-unsafe" not in render_text(s)


def read(data: bytes) -> Summary:
    s = Summary()
    s.read(io.BytesIO(data), "f")
    return s


def test_not_an_audit_log() -> None:
    ls = Path(sys.executable).read_bytes()[:200000]  # a binary, like /bin/ls
    assert read(ls).not_audit_logs[0][0] == "f"
    other_jsonl = b"".join(json.dumps({"n": i}).encode() + b"\n" for i in range(10))
    assert read(other_jsonl).not_audit_logs == [("f", 10, 10, 0)]
    mostly_not = json.dumps(rec(0)).encode() + b"\n" + b"x\n" * 3
    assert read(mostly_not).not_audit_logs == [("f", 4, 3, 1)]


@pytest.mark.parametrize(
    "data",
    [
        b"",  # an empty log
        b"\n\n",
        json.dumps(rec(0)).encode() + b"\nnot json\n",  # one bad line in two: still a log
        b'{"ts": "2026-11-22T04:00:00Z", "ac',  # the first record, still being written
    ],
)
def test_an_audit_log(data: bytes) -> None:
    assert read(data).not_audit_logs == []


def test_urlsan_report_refuses_a_binary(tmp_path: Path) -> None:
    binary = tmp_path / "ls"
    binary.write_bytes(Path(sys.executable).read_bytes()[:100000])
    out = tmp_path / "report.html"
    run = subprocess.run(
        [sys.executable, "-m", "urlsan.cli", "report", "--html", "-o", str(out), str(binary)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 3, run.stderr
    assert f"{binary} is not an audit log: none of its" in run.stderr
    assert run.stdout == "" and not out.exists()


def test_servers_that_read_targets_otherwise() -> None:
    tomcat = {"server": "tomcat", "path": "/admin/", "rfc": "/s/..;/admin/", "climbs": True}
    nginx = {"server": "nginx", "path": "/a/b", "rfc": "/a%2Fb", "climbs": False}
    s = summary(
        [
            rec(0, "rejected", before="/s/..;/admin/", backends=[tomcat]),
            rec(1, "audited", before="/a%2fb", backends=[nginx]),
            rec(2, "rejected", before="/t/..;/admin/", backends=[tomcat]),
            rec(3, "rewritten", backends="not a list"),
        ]
    )
    d = s.as_dict()
    assert [(b["server"], b["requests"], b["climbing"]) for b in d["backends"]] == [
        ("tomcat", 2, 2),
        ("nginx", 1, 0),
    ]
    assert d["backends"][0]["examples"][0] == {
        "before": "/s/..;/admin/", "path": "/admin/", "rfc": "/s/..;/admin/", "action": "rejected"
    }  # fmt: skip
    text = render_text(s)
    assert "Read otherwise by the servers behind" in text
    assert "tomcat: /s/..;/admin/ -> /admin/ (RFC 3986: /s/..;/admin/; rejected)" in text
    assert "<code>/a%2fb</code> → <code>/a/b</code>" in render_html(s)


def test_one_host_and_one_client_are_singular_in_text_and_html() -> None:
    finding = {"rule": "dot-segment", "component": "path", "offset": 3, "detail": ".."}
    s = summary([rec(0, host="a.test", client="10.0.0.1:1", findings=[finding], status=200)])
    text = render_text(s)
    assert "dot-segment (low): 1 host: a.test 1\n    1 client: 10.0.0.1 1" in text
    page = render_html(s)
    assert "1 request</summary>" in page and "1 host: " in page and "1 client: " in page
    assert "1 hosts" not in text + page and "1 clients" not in text + page


def test_targets_are_ranked_by_the_records_target_severity() -> None:
    """A record's target_severity ranks it, not its findings' highest: the DOI's medium
    escaped-slash is a low target, the low "//.." a critical one; the reason goes with it."""
    slash = {"rule": "escaped-slash", "component": "path", "offset": 9, "detail": "%2F",
             "severity": "medium"}  # fmt: skip
    dots = {"rule": "dot-segment", "component": "path", "offset": 2, "detail": "..",
            "severity": "low"}  # fmt: skip
    s = summary(
        [
            rec(
                0,
                before="/chapter/10.1007%2F978",
                findings=[slash],
                severity="medium",
                target_severity="low",
                severity_reason="no reader climbs",
                status=200,
            ),
            rec(
                1,
                before="/.//..//etc/passwd",
                findings=[dots],
                severity="low",
                target_severity="critical",
                severity_reason="go reaches above the root",
                status=200,
            ),
        ]
    )
    d = s.as_dict()
    assert [(t["severity"], t["examples"][0]["reason"]) for t in d["targets"]] == [
        ("critical", "go reaches above the root"),
        ("low", "no reader climbs"),
    ]
    assert [r["before"] for r in d["suspicious_answered_2xx"]["examples"]] == ["/.//..//etc/passwd"]
    high = Summary(min_severity="high")
    high.add(rec(0, findings=[slash], target_severity="low"))
    high.add(rec(1, findings=[dots], target_severity="critical"))
    assert [t["severity"] for t in high.as_dict()["targets"]] == ["critical"]
