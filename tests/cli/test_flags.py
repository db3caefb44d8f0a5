"""The flags `urlsan audit` and `urlsan canon` take from the option table (cli/flags.py): the
proxy's options, with the same meaning; --filter reads flow files as the proxy's urlsan_filter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_harness import RunUrlsan

LOG = (
    b'192.0.2.7 - - [22/Nov/2026:04:57:58 +0000] "GET /a?utm_source=x&id=1&ref=2 HTTP/1.1" '
    b'200 3 "-" "curl/8"\n'
    b'192.0.2.7 - - [22/Nov/2026:04:57:59 +0000] "GET /' + b"b" * 300 + b'/./ HTTP/1.1" 200 3 '
    b'"-" "curl/8"\n'
)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_audit_takes_the_proxy_s_parameter_and_length_options(
    urlsan: RunUrlsan, tmp_path: Path
) -> None:
    log, out = tmp_path / "access.log", tmp_path / "out.jsonl"
    log.write_bytes(LOG)
    run = urlsan(
        "audit", "-q", "-o", str(out), "--drop-params", "utm_source", "--drop-params", "ref",
        "--max-target", "200", str(log),
    )  # fmt: skip
    assert run.status == 0, run.err
    first, long = _records(out)
    assert first["after"] == "/a?id=1" and first["edits"][0]["rule"] == "drop-params"
    assert long["action"] == "skipped-oversize"
    run = urlsan("audit", "-q", "-o", str(out), "--keep-params", "id", str(log))
    assert run.status == 0 and _records(out)[0]["after"] == "/a?id=1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-target", "-1"], "--max-target: must be 0 or more"),
        (["--max-target", "x"], "--max-target: not a number"),
        (["--drop-params", "a:"], "--drop-params"),
        (["--backends", "nginx,nope"], "--backends"),
        (["--mode", "nope"], "--mode: invalid choice"),
        (["--drop-parms", "x"], "unrecognized arguments"),  # a misspelt flag is an error
        (["--filter", "~zz"], "--filter"),
        (["--filter", "~d example.com"], "--filter reads mitmproxy flow files, not access-log"),
    ],
)
def test_bad_values_are_usage_errors(
    urlsan: RunUrlsan, tmp_path: Path, args: list[str], message: str
) -> None:
    log, out = tmp_path / "access.log", tmp_path / "out.jsonl"
    log.write_bytes(LOG)
    run = urlsan("audit", "-o", str(out), *args, str(log))
    assert run.status == 2 and message in run.err, run.err
    assert not out.exists() or not out.read_bytes()


def test_canon_takes_the_same_policy_flags(urlsan: RunUrlsan) -> None:
    urls = ["http://example.com/?utm_x=1&id=2&z=3", "http://other.example/?utm_y=1&z=3"]
    run = urlsan("canon", "--drop-params", "utm_*", "--keep-params", "example.com:id", *urls)
    assert run.status == 0 and run.lines == [
        "http://example.com/?id=2",
        "http://other.example/?z=3",
    ]
    run = urlsan("canon", "--check", "--backends", "nginx", "--backends", "tomcat", "/a;b/../c")
    assert "read otherwise by nginx,tomcat" in run.err


def test_audit_filter_keeps_the_flows_the_proxy_would_touch(
    urlsan: RunUrlsan, tmp_path: Path
) -> None:
    pytest.importorskip("mitmproxy")
    from mitmproxy import io as mio
    from mitmproxy.test import tflow, tutils

    path, out = tmp_path / "flows", tmp_path / "out.jsonl"
    with open(path, "wb") as f:
        writer = mio.FlowWriter(f)
        for host, status in (("a.example", 200), ("b.example", 404), ("a.example", 404)):
            request = tutils.treq(path=b"/x/./%7e", host=host, authority=b"")
            request.headers["host"] = host
            writer.add(tflow.tflow(req=request, resp=tutils.tresp(status_code=status)))
        writer.add(tflow.ttcpflow())
    run = urlsan("audit", "-q", "-o", str(out), "--filter", "~d a.example", str(path))
    assert run.status == 0, run.err
    assert [(r["host"], r["status"]) for r in _records(out)] == [
        ("a.example", 200),
        ("a.example", 404),
    ]
    # Matched as the addon matches at requestheaders: there is no response yet.
    run = urlsan("audit", "-q", "-o", str(out), "--filter", "~c 404", str(path))
    assert run.status == 0 and _records(out) == []
    with open(path, "ab") as f:
        f.write(b"99999:4:torn")
    run = urlsan("audit", "-q", "-o", str(out), "--filter", "~d a.example", str(path))
    assert run.status == 3 and "unreadable flow data" in run.err
    assert len(_records(out)) == 2
