"""Faults through the real proxy (issue #5): the proxy keeps serving, and reports each fault once.

* the audit log's disk fills while running (RLIMIT_FSIZE on the proxy: writes past the limit
  fail with EFBIG, as on a full disk) or from the start (/dev/full: ENOSPC);
* the audit log file is removed while running;
* the upstream resets connections;
* a client sends a 100 KB target;
* clients disconnect mid-request.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.hardening import support
from urlsan.core import Policy

pytestmark = pytest.mark.e2e
POLICY = Policy.profile("rfc3986").with_rules("+strip-fragment")
DIRTY = [f"/dirty/{i}/./x/../%7e?q=%41".encode() for i in range(400)]


@pytest.fixture(scope="module", autouse=True)
def addon_present() -> None:
    reason = support.addon_missing()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def upstream() -> Iterator[support.Werkzeug]:
    with support.Werkzeug() as server:
        yield server


def send_all(port: int, targets: list[bytes]) -> Counter[int]:
    statuses: Counter[int] = Counter()
    for t in targets:
        statuses[support.raw_request(port, t).status] += 1
    support.FIGURES["faults: requests sent"] += len(targets)
    return statuses


def log_reports(output: str) -> list[str]:
    """Lines where the proxy reports a problem with the audit log."""
    return [
        line
        for line in output.splitlines()
        if "audit log" in line.lower() or "urlsan_log" in line.lower()
    ]


def complete_records(path: Path) -> tuple[int, int]:
    """(valid JSON lines, torn lines) of a log; a torn line is one that does not parse."""
    import json

    if not path.exists():
        return 0, 0
    valid = torn = 0
    for line in path.read_bytes().split(b"\n"):
        if not line:
            continue
        try:
            json.loads(line)
            valid += 1
        except ValueError:
            torn += 1
    return valid, torn


ADDON_GAP = "addon gap found by tests/hardening (reported to the addon owner)"


class LogFault(NamedTuple):
    statuses: Counter[int]
    forwarded: int
    valid: int
    torn: int
    reports: list[str]
    output: str


@pytest.fixture(scope="module")
def disk_fills(tmp_path_factory: pytest.TempPathFactory) -> LogFault:
    """200 dirty requests while the log's 'disk' fills at 16 KiB (EFBIG past RLIMIT_FSIZE)."""
    log = tmp_path_factory.mktemp("fsize") / "audit.jsonl"
    limit = 16 * 1024
    with support.Werkzeug() as upstream:
        before = support.WSGI_REQUESTS[0]
        with support.Proxy(upstream.port, log, fsize=limit) as proxy:
            statuses = send_all(proxy.port, DIRTY[:200])
            statuses[support.raw_request(proxy.port, b"/after/./fault").status] += 1
            output = proxy.output()
        forwarded = support.WSGI_REQUESTS[0] - before
    assert log.stat().st_size <= limit
    valid, torn = complete_records(log)
    reports = log_reports(output)
    support.NOTES.append(
        f"fault disk full (EFBIG at {limit} B): 201 requests -> {dict(statuses)}; "
        f"{valid} records kept, {torn} torn; {len(reports)} report line(s)"
    )
    return LogFault(statuses, forwarded, valid, torn, reports, output)


def test_disk_full_keeps_serving(disk_fills: LogFault) -> None:
    assert disk_fills.statuses == Counter({200: 201})
    assert disk_fills.forwarded == 201
    assert 0 < disk_fills.valid < 200
    assert disk_fills.reports, f"the full disk was not reported:\n{disk_fills.output[-2000:]}"


def test_disk_full_reported_once(disk_fills: LogFault) -> None:
    assert len(disk_fills.reports) == 1, "\n".join(disk_fills.reports[:3])


def test_disk_full_leaves_no_torn_record(disk_fills: LogFault) -> None:
    # os.write past the limit writes what fits, then fails: the record is cut at the limit.
    # (Fix: write only whole records, e.g. truncate back to the record's start on error.)
    assert disk_fills.torn == 0


@pytest.fixture(scope="module")
def full_device() -> LogFault:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with support.Werkzeug() as upstream:
        before = support.WSGI_REQUESTS[0]
        with support.Proxy(upstream.port, "/dev/full") as proxy:
            statuses = send_all(proxy.port, DIRTY[:50])
            output = proxy.output()
        forwarded = support.WSGI_REQUESTS[0] - before
    reports = log_reports(output)
    support.NOTES.append(
        f"fault /dev/full (ENOSPC): 50 requests -> {dict(statuses)}; {len(reports)} report line(s)"
    )
    return LogFault(statuses, forwarded, 0, 0, reports, output)


def test_full_device_keeps_serving(full_device: LogFault) -> None:
    assert full_device.statuses == Counter({200: 50}) and full_device.forwarded == 50
    assert full_device.reports, f"ENOSPC was not reported:\n{full_device.output[-2000:]}"


def test_full_device_reported_once(full_device: LogFault) -> None:
    assert len(full_device.reports) == 1, "\n".join(full_device.reports[:3])


@pytest.fixture(scope="module")
def log_removed(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogFault, int]:
    log = tmp_path_factory.mktemp("removed") / "audit.jsonl"
    with support.Werkzeug() as upstream:
        with support.Proxy(upstream.port, log) as proxy:
            statuses = send_all(proxy.port, DIRTY[:20])
            kept = complete_records(log)
            log.unlink()
            statuses += send_all(proxy.port, DIRTY[20:40])
        # Read after a clean shutdown: the path is checked every second, and once more at exit.
        output = proxy.output(settle=0)
        after = complete_records(log)
    reports = log_reports(output)
    support.NOTES.append(
        f"fault log removed: 40 requests -> {dict(statuses)}; "
        f"after removal the log holds {after[0]} records; "
        f"{len(reports)} report line(s)"
    )
    return LogFault(statuses, 40, after[0], after[1], reports, output), kept[0]


def test_log_removed_keeps_serving(log_removed: tuple[LogFault, int]) -> None:
    fault, kept = log_removed
    assert fault.statuses == Counter({200: 40})
    assert kept == 20


def test_log_removed_is_noticed(log_removed: tuple[LogFault, int]) -> None:
    # The 20 records written after the removal must not vanish: the log is created again,
    # holding them (and those written since the check before the removal), and the removal is
    # reported, once.
    fault, _ = log_removed
    assert fault.valid >= 20 and fault.torn == 0, fault.output[-2000:]
    assert len(fault.reports) == 1, fault.output[-2000:]


class ResettingUpstream:
    """Answers 200, except that it resets the connection (RST) for targets containing 'reset'."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind((support.LOOPBACK, 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.counts: Counter[str] = Counter()
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def __enter__(self) -> ResettingUpstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.running = False
        with contextlib.suppress(OSError):
            socket.create_connection((support.LOOPBACK, self.port), 1).close()
        self.thread.join(5)
        self.sock.close()

    def serve(self) -> None:
        while self.running:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn: socket.socket) -> None:
        with conn:
            buf = b""
            while self.running:
                try:
                    while b"\r\n\r\n" not in buf:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        buf += chunk
                except OSError:
                    return
                head, _, buf = buf.partition(b"\r\n\r\n")
                if b"reset" in head.split(b"\r\n", 1)[0]:
                    self.counts["reset"] += 1
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                self.counts["ok"] += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")


def test_upstream_resets_connections(tmp_path: Path) -> None:
    targets = [b"/reset/./%7e" if i % 3 == 0 else b"/fine/./%7e" for i in range(60)]
    with (
        ResettingUpstream() as upstream,
        support.Proxy(upstream.port, tmp_path / "a.jsonl") as proxy,
    ):
        statuses = send_all(proxy.port, targets)
        alive = support.raw_request(proxy.port, b"/fine").status
        output = proxy.output()
        records = proxy.records()
    support.NOTES.append(
        f"fault upstream resets: 60 requests -> {dict(statuses)}; upstream "
        f"{dict(upstream.counts)}; {len(records)} audit records"
    )
    assert statuses == Counter({200: 40, 502: 20}), (statuses, output[-2000:])
    assert alive == 200
    assert len(records) == 60  # every request was touched before it went upstream
    assert "Traceback" not in output


def test_100_kb_target(tmp_path: Path, upstream: support.Werkzeug) -> None:
    log = tmp_path / "big.jsonl"
    cases = {
        "unreserved escapes": b"/" + b"%7e" * 34000,
        "controls and stray percents": b"/" + b"\x01%" * 51200,
        "dot segments": b"/a/.." * 20480,
    }
    with support.Proxy(upstream.port, log) as proxy:
        results = {}
        for name, target in cases.items():
            t0 = time.monotonic()
            r = support.raw_request(proxy.port, target, timeout=120)
            results[name] = (r.status, time.monotonic() - t0)
        alive = support.raw_request(proxy.port, b"/after/big").status
        output = proxy.output()
    sizes = [len(line) for line in log.read_bytes().splitlines()] if log.exists() else []
    support.FIGURES["faults: requests sent"] += len(cases) + 1
    support.NOTES.append(
        "fault 100 KB targets: "
        + "; ".join(
            f"{name} ({len(cases[name]) // 1024} KiB) -> {s} in {dt:.2f} s"
            for name, (s, dt) in results.items()
        )
        + f"; audit record sizes {[f'{n // 1024} KiB' for n in sizes]}"
    )
    assert alive == 200
    for _name, (status, _dt) in results.items():
        assert status in (200, 400, 414, 431), results
    assert "Traceback" not in output, output[-3000:]


def test_clients_disconnect_mid_request(tmp_path: Path, upstream: support.Werkzeug) -> None:
    pieces = [
        b"GET /a/./b",  # half a request line
        b"GET /a/./b HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half",  # half the headers
        b"POST /a/./post HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n0123456789",
        b"GET /a/./gone HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",  # gone before the response
    ]
    log = tmp_path / "mid.jsonl"
    with support.Proxy(upstream.port, log) as proxy:
        for _ in range(5):
            for data in pieces:
                with socket.create_connection((support.LOOPBACK, proxy.port), 5) as s:
                    s.sendall(data)
                    time.sleep(0.02)
        time.sleep(0.5)
        statuses = send_all(proxy.port, DIRTY[:20])
        output = proxy.output()
    valid, torn = complete_records(log)
    support.FIGURES["faults: requests sent"] += 20
    support.NOTES.append(
        f"fault client disconnects: 20 aborted requests, then 20 -> "
        f"{dict(statuses)}; log {valid} records, {torn} torn"
    )
    assert statuses == Counter({200: 20})
    assert torn == 0
    assert "Traceback" not in output, output[-3000:]
    assert re.search(r"urlsan", output) is None or "failed" not in output, output[-3000:]
