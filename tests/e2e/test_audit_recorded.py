"""End to end: traffic recorded by real tools, audited by `urlsan audit`, read by `urlsan report`.

* a real ``mitmdump -w`` flow file and its ``hardump`` HAR export of the same requests (mitmdump
  as a plain proxy, no urlsan addon, in front of a local HTTP server);
* a real nginx access log in the combined format (skipped with a reason when nginx is absent:
  ``.ci/install-nginx``).

The records must be the ones the proxy's audit mode writes for these targets, and the report must
read them unchanged.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import harness as support
from urlsan.audit.redact import DEFAULT_REDACT, Redactor
from urlsan.core import Policy, canonicalize

pytestmark = pytest.mark.e2e

POLICY = Policy.profile("rfc3986").with_rules("+strip-fragment")  # the proxy's default
REDACT = Redactor.of(DEFAULT_REDACT)
# Targets every recorder takes: a proxy in absolute form, nginx in origin form.
TARGETS = [
    b"/%7euser/./a/../b?q=%41&token=s3cret",
    b"/clean",  # canonical, no finding: no record
    b"/files/a%2fb",  # canonical, but a finding: an "unchanged" record
    b"/x//y/%2e%2E/z",
    b"/p%5bq%5D",
]
# Only nginx takes these (mitmproxy refuses a raw non-ASCII byte in absolute form).
NGINX_ONLY = [b"/caf\xc3\xa9", b'/q"x\\y']


def expected(targets: list[bytes]) -> list[tuple[str, str, str]]:
    """(before, after, action) of the records the proxy's audit mode writes for ``targets``."""
    out = []
    for target in targets:
        r = canonicalize(target, POLICY, form="origin")
        if r.changed or r.findings:
            action = "audited" if r.changed else "unchanged"
            out.append((REDACT.text(r.input), REDACT.text(r.url), action))
    return out


def got(records: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(r["before"], r["after"], r["action"]) for r in records]


def urlsan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "urlsan.cli", *args], capture_output=True, text=True, timeout=120
    )


def audit_and_report(recording: Path, tmp: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out = tmp / f"{recording.name}.audit.jsonl"
    run = urlsan("audit", "-o", str(out), str(recording))
    assert run.returncode == 0, run.stderr
    assert "audit records written" in run.stderr and "unreadable" not in run.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    report = urlsan("report", "--json", str(out))
    assert report.returncode == 0, report.stderr
    text = urlsan("report", str(out))
    assert (
        text.returncode == 0 and f"{len(records)} requests in {len(records)} lines" in text.stdout
    )
    return records, json.loads(report.stdout)


def send(port: int, request_line: bytes, host: bytes) -> bytes:
    """One raw HTTP/1.1 request; the status line of the answer."""
    head = request_line + b"\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n"
    with socket.create_connection((support.LOOPBACK, port), 10) as s:
        s.sendall(head)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data.split(b"\r\n", 1)[0]


# --- a local origin server


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def origin() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer((support.LOOPBACK, 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield int(server.server_port)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# --- mitmdump -w and hardump


def _mitmdump() -> str:
    pytest.importorskip("mitmproxy", reason="mitmproxy is not installed (urlsan[proxy])")
    binary = Path(sys.executable).with_name("mitmdump")
    if not binary.exists():
        pytest.skip(f"no mitmdump next to {sys.executable}")
    return str(binary)


@pytest.fixture
def recorded_by_mitmdump(origin: int, tmp_path: Path) -> tuple[Path, Path, int, float, float]:
    """A flow file and a HAR file of the same requests, written by a real mitmdump."""
    flows, har = tmp_path / "traffic.flows", tmp_path / "traffic.har"
    port = support.free_port()
    proc = subprocess.Popen(
        [
            _mitmdump(),
            "--listen-host",
            support.LOOPBACK,
            "-p",
            str(port),
            "--set",
            f"confdir={tmp_path / 'mitmproxy'}",
            "-w",
            str(flows),
            "--set",
            f"hardump={har}",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        support.wait_for_port(port, proc, timeout=60)
        start = time.time()
        authority = f"127.0.0.1:{origin}".encode()
        for target in TARGETS:
            line = b"GET http://" + authority + target + b" HTTP/1.1"
            assert b" 200 " in send(port, line, authority), target
        # A Host to canonicalize: a host edit in the record.
        upper = f"LOCALHOST:{origin}".encode()
        assert b" 200 " in send(port, b"GET http://" + upper + b"/h HTTP/1.1", upper)
        # Refused by mitmproxy before any addon runs: no flow, so nothing in either file.
        refused = send(port, b"GET http://" + authority + b"/a b HTTP/1.1", authority)
        assert refused.startswith(b"HTTP/1.1 400")
        end = time.time()
    finally:
        support.stop(proc)  # SIGTERM: mitmdump writes the HAR file when it shuts down
        output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
        if proc.stdout:
            proc.stdout.close()
    assert proc.returncode == 0, output
    assert flows.stat().st_size and har.stat().st_size, output
    return flows, har, origin, start, end


def test_mitmdump_flow_file(
    recorded_by_mitmdump: tuple[Path, Path, int, float, float], tmp_path: Path
) -> None:
    flows, _, origin, start, end = recorded_by_mitmdump
    records, report = audit_and_report(flows, tmp_path)
    host_record = records.pop()
    assert got(records) == expected(TARGETS)
    assert all(r["host"] == f"127.0.0.1:{origin}" and r["scheme"] == "http" for r in records)
    assert all(r["client"].startswith("127.0.0.1:") and r["method"] == "GET" for r in records)
    assert all(r["http_version"] == "HTTP/1.1" and r["profile"] == "rfc3986" for r in records)
    assert "s3cret" not in flows.with_name(f"{flows.name}.audit.jsonl").read_text()
    assert host_record["host"] == f"localhost:{origin}" and host_record["action"] == "audited"
    assert [e["rule"] for e in host_record["edits"]] == ["lowercase-host"]
    # The report: every record, the time range of the run, buckets of one second.
    assert report["requests"] == len(records) + 1
    first = report["time_range"]["first"]
    assert time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(start))) <= first
    assert report["time_range"]["last"] <= time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))
    assert report["timeline"]["bucket_seconds"] == 1
    assert {h["host"] for h in report["hosts"]} == {f"127.0.0.1:{origin}", f"localhost:{origin}"}


def test_mitmdump_har_export(
    recorded_by_mitmdump: tuple[Path, Path, int, float, float], tmp_path: Path
) -> None:
    flows, har, _, _, _ = recorded_by_mitmdump
    records, report = audit_and_report(har, tmp_path)
    from_flows, _ = audit_and_report(flows, tmp_path)
    # The same requests, the same records; only the client is not in a HAR file.
    assert [{**r, "client": ""} for r in from_flows] == records
    assert got(records[:-1]) == expected(TARGETS)
    assert report["requests"] == len(records)


# --- nginx


def test_nginx_access_log(tmp_path: Path) -> None:
    binary = support.nginx_binary()
    if binary is None:
        pytest.skip(support.NGINX_MISSING)
    log = tmp_path / "access.log"
    with support.Nginx(binary, log_format="combined") as nginx:
        for target in TARGETS + NGINX_ONLY:
            assert send(nginx.port, b"GET " + target + b" HTTP/1.1", b"localhost") == (
                b"HTTP/1.1 200 OK"
            ), target
        shutil.copyfile(nginx.log, log)
    assert len(log.read_bytes().splitlines()) == len(TARGETS + NGINX_ONLY)
    records, report = audit_and_report(log, tmp_path)
    # nginx wrote '"', '\' and the raw bytes as \xHH: they read back to the bytes sent.
    assert got(records) == expected(TARGETS + NGINX_ONLY)
    assert all(r["client"] == "127.0.0.1" and r["host"] is None for r in records)
    assert all(r["ts"].endswith(".000Z") for r in records)  # the log has whole seconds
    assert report["requests"] == len(records) and report["timeline"]["bucket_seconds"] == 1
    # A gzipped, rotated copy reads the same.
    rotated = tmp_path / "access.log.1"
    with rotated.open("wb") as f:
        subprocess.run(["gzip", "-c", str(log)], stdout=f, check=True)
    again, _ = audit_and_report(rotated, tmp_path)
    assert again == records
    os.remove(rotated)
