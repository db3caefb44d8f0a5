"""Bounded load through the real proxy, on loopback only (issue #5).

URLSAN_LOAD_REQUESTS requests (default 2000; `make check-all`: 20000) over URLSAN_LOAD_CONNECTIONS
clients (default 20; check-all: 50), half on keep-alive connections and half opening a connection
per request, mixing clean and dirty targets, through ``urlsan proxy`` to a private nginx (or
werkzeug when nginx is not installed).  Every request answered; the upstream saw exactly the
forwarded count; the audit log holds exactly one valid JSON record per touched request; the
proxy's resident memory stays flat after warm-up.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.hardening import support
from urlsan.core import Policy, canonicalize

pytestmark = pytest.mark.e2e

REQUESTS = int(os.environ.get("URLSAN_LOAD_REQUESTS", "2000"))
CONNECTIONS = int(os.environ.get("URLSAN_LOAD_CONNECTIONS", "20"))
# Growth allowed between the warmed-up proxy (after 20% of the requests) and the end of the run.
RSS_GROWTH_MIB = float(os.environ.get("URLSAN_LOAD_RSS_GROWTH_MIB", "48"))

CLEAN = [
    b"/",
    b"/index.html",
    b"/static/app.js?v=3",
    b"/api/items?id=42&sort=asc",
    b"/a/b/c/d",
    b"/search?q=url+sanitizer",
    b"/~user/page",
    b"/img/logo.png",
]
DIRTY = [
    b"/a/./b/../c",
    b"/%7euser/%41",
    b"/a/%2e%2e/b",
    b"/a%2fb?x=%7e",
    b"/caf\xc3\xa9",
    b"/a/b/../../../../etc/passwd",
    b"/q?x=a%zz",
    b"/p#frag",
    b"/%c0%ae%c0%ae/x",
    b"/a\\b",
    b"/a?b=%2525",
    b"/x/%2E/y",
    b"/\xff\xfe",
    b"/a?x={}",
    b"/a|b^c`d",
    b"/..;/admin",
    b"/a%252e%252e/b",
]
POLICY = Policy.profile("rfc3986").with_rules("+strip-fragment")


def touched(target: bytes) -> bool:
    r = canonicalize(target, POLICY, form="origin")
    return r.changed or bool(r.findings)


def plan(total: int, clients: int) -> list[list[bytes]]:
    mix = CLEAN + DIRTY
    per = [[] for _ in range(clients)]  # type: list[list[bytes]]
    for i in range(total):
        per[i % clients].append(mix[(i * 7 + i // len(mix)) % len(mix)])
    return per


def test_load_through_proxy(tmp_path: Path) -> None:
    reason = support.addon_missing()
    if reason:
        pytest.skip(reason)
    assert all(touched(t) for t in DIRTY) and not any(touched(t) for t in CLEAN)
    binary = support.nginx_binary()
    upstream_cm = support.Nginx(binary) if binary else support.Werkzeug()
    log = tmp_path / "audit.jsonl"
    per_client = plan(REQUESTS, CONNECTIONS)
    statuses: Counter[int] = Counter()
    errors: list[str] = []
    done = [0]
    lock = threading.Lock()
    rss: list[tuple[int, int]] = []  # (requests done, RSS KiB)

    with upstream_cm as upstream, support.Proxy(upstream.port, log) as proxy:
        before_upstream = support.WSGI_REQUESTS[0]

        def client(n: int, targets: list[bytes]) -> None:
            keep = n % 2 == 0
            conn = support.KeepAlive(proxy.port) if keep else None
            try:
                for t in targets:
                    try:
                        r = conn.request(t) if conn else support.raw_request(proxy.port, t)
                    except OSError as e:
                        with lock:
                            errors.append(f"{t!r}: {e!r}")
                        continue
                    with lock:
                        statuses[r.status] += 1
                        done[0] += 1
            finally:
                if conn:
                    conn.close()

        stop = threading.Event()

        def sampler() -> None:
            while not stop.wait(0.2):
                rss.append((done[0], proxy.rss_kib()))

        threads = [threading.Thread(target=client, args=(i, ts)) for i, ts in enumerate(per_client)]
        sampling = threading.Thread(target=sampler)
        t0 = time.monotonic()
        sampling.start()
        for th in threads:
            th.start()
        for th in threads:
            th.join(600)
        elapsed = time.monotonic() - t0
        stop.set()
        sampling.join()
        rss.append((done[0], proxy.rss_kib()))
        if binary:
            upstream_count = sum(1 for _ in upstream.records())  # type: ignore[union-attr]
        else:
            upstream_count = support.WSGI_REQUESTS[0] - before_upstream
        records = proxy.records()
        output = proxy.output()

    sent = [t for ts in per_client for t in ts]
    expected_records = sum(1 for t in sent if touched(t))
    support.FIGURES["load: requests sent through the proxy"] += len(sent)
    support.FIGURES["load: audit records checked"] += len(records)
    warm = next((kib for n, kib in rss if n >= len(sent) // 5), rss[0][1])
    end = rss[-1][1]
    peak = max(kib for _, kib in rss)
    support.NOTES.append(
        f"load: {len(sent)} requests, {CONNECTIONS} clients, {elapsed:.1f} s "
        f"({len(sent) / elapsed:.0f} req/s); statuses {dict(statuses)}; upstream saw "
        f"{upstream_count}; {len(records)} audit records for {expected_records} dirty requests; "
        f"proxy RSS warm {warm // 1024} MiB, end {end // 1024} MiB, peak {peak // 1024} MiB"
    )

    assert not errors, errors[:10]
    assert statuses == Counter({200: len(sent)}), (statuses, output[-2000:])
    assert upstream_count == len(sent)
    assert len(records) == expected_records
    got = Counter(r["before"] for r in records)
    want = Counter(t.decode("utf-8", "surrogateescape") for t in sent if touched(t))
    assert got == want
    assert "Traceback" not in output, output[-3000:]
    assert (end - warm) / 1024 <= RSS_GROWTH_MIB, f"proxy RSS grew {(end - warm) // 1024} MiB"
