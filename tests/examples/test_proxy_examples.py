"""The examples that run `urlsan proxy`: each is started as a user would start it, then driven
by a real client against a local origin that records what reaches it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.examples.shared import Origin
from tests.harness import EXAMPLES, example_env, running

pytestmark = pytest.mark.e2e


def get(port: int, url: str) -> httpx.Response:
    with httpx.Client(proxy=f"http://127.0.0.1:{port}", trust_env=False, timeout=10) as client:
        return client.get(url)


def raw_get(port: int, url: str) -> None:
    """Send the target byte for byte: httpx, like every client library, normalizes some of it."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        host = url.split("/")[2]
        s.sendall(f"GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        while s.recv(65536):
            pass


def audit(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_browsing_proxy_rewrites_and_logs(origin: Origin, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    with running("browsing-proxy.sh", tmp_path, LOG=str(log)) as port:
        raw_get(port, f"{origin.url}/%7Eguide/./intro")
        raw_get(port, f"{origin.url}/about")
    assert origin.targets == ["/~guide/intro", "/about"]
    (entry,) = audit(log)  # an unchanged request without findings is not logged
    assert entry["action"] == "rewritten"
    assert (entry["before"], entry["after"]) == ("/%7Eguide/./intro", "/~guide/intro")
    assert {e["rule"] for e in entry["edits"]} == {"decode-unreserved", "remove-dot-segments"}


def test_audit_only_forwards_unchanged_then_reports(origin: Origin, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    with running("audit-only.sh", tmp_path, LOG=str(log)) as port:
        raw_get(port, f"{origin.url}/%7Eguide/./intro")
        raw_get(port, f"{origin.url}/docs/../about")
    assert origin.targets == ["/%7Eguide/./intro", "/docs/../about"]
    assert [e["action"] for e in audit(log)] == ["audited", "audited"]
    report = subprocess.run(
        ["bash", str(EXAMPLES / "audit-only.sh"), "report"],
        cwd=tmp_path,
        env=example_env(LOG=str(log)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.returncode == 0, report.stderr
    assert "2 requests" in report.stdout and "audited" in report.stdout
    assert "<svg" in (tmp_path / "audit-report.html").read_text()


def test_scoped_storage_is_left_alone(origin: Origin, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    # "localhost" plays the object store, 127.0.0.1 everything else.
    with running("scoped-storage.sh", tmp_path, LOG=str(log), STORAGE="localhost") as port:
        raw_get(port, f"http://localhost:{origin.port}/bucket/%7Ekey/./x")
        raw_get(port, f"{origin.url}/bucket/%7Ekey/./x")
        # Signed by its parameters: left alone whatever the filter says.
        raw_get(port, f"{origin.url}/b/%7Ek?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab")
    assert origin.targets == [
        "/bucket/%7Ekey/./x",
        "/bucket/~key/x",
        "/b/%7Ek?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab",
    ]
    assert [e["action"] for e in audit(log)] == ["rewritten", "skipped-signed"]


def crawl_through_proxy(example: str, origin: Origin, tmp_path: Path) -> list[dict[str, Any]]:
    """Run a crawler example through `urlsan proxy` with the crawler profile; the audit log."""
    log = tmp_path / "audit.jsonl"
    crawler_profile = ("--set", "urlsan_profile=crawler")
    with running("browsing-proxy.sh", tmp_path, *crawler_profile, LOG=str(log)) as port:
        crawl = subprocess.run(
            [
                sys.executable,
                str(EXAMPLES / example),
                "--proxy",
                f"http://127.0.0.1:{port}",
                f"{origin.url}/",
            ],
            env=example_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert crawl.returncode == 0, crawl.stderr
    assert f"{origin.url}/search?utm_source=feed&q=a%2fb&a=1" in crawl.stdout
    # Whatever the crawler asked for, the site saw canonical targets only: no tracking
    # parameters, query sorted, no escaped unreserved characters, no dot segments.
    assert "/search?a=1&q=a%2Fb" in origin.targets
    assert all(
        "utm_" not in t and "fbclid" not in t and "%7E" not in t and "/." not in t
        for t in origin.targets
    ), origin.targets
    return audit(log)


def test_requests_crawler_through_the_proxy(origin: Origin, tmp_path: Path) -> None:
    pytest.importorskip("requests")
    log = crawl_through_proxy("crawl_requests.py", origin, tmp_path)
    rewritten = {e["before"]: e["after"] for e in log if e["action"] == "rewritten"}
    assert rewritten == {
        "/search?utm_source=feed&q=a%2Fb&a=1": "/search?a=1&q=a%2Fb",
        "/search?q=a%2Fb&a=1&fbclid=xyz": "/search?a=1&q=a%2Fb",
    }


def test_scrapy_crawler_through_the_proxy(origin: Origin, tmp_path: Path) -> None:
    pytest.importorskip("scrapy")
    log = crawl_through_proxy("crawl_scrapy.py", origin, tmp_path)
    rewritten = {e["before"] for e in log if e["action"] == "rewritten"}
    # Scrapy resolves dot segments when it joins links, but keeps %7E and lower-case escapes.
    assert {"/%7Eguide/intro", "/search?utm_source=feed&q=a%2fb&a=1"} <= rewritten


def test_examples_are_executable() -> None:
    for script in EXAMPLES.glob("*.sh"):
        assert os.access(script, os.X_OK), script
