"""End to end: a real mitmdump with the addon, a recording upstream, clients sending raw bytes.

What the upstream receives is checked byte for byte, and the audit log record by record against it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.harness import (
    Proxy,
    Upstream,
    header,
    mitmdump_script_command,
    read_response,
    running_proxy,
    status,
    upstream_server,
    urlsan_proxy_command,
)
from tests.harness import exchange as raw_request
from urlsan.audit.redact import DEFAULT_REDACT, Redactor
from urlsan.core import InvalidTarget, Policy, canonicalize

pytestmark = pytest.mark.e2e

WIRE_SAFE = re.compile(rb"[\x21-\x7e]+")
POLICY = Policy.profile("rfc3986").with_rules("+strip-fragment")
SIGNED = b"/p%7e?X-Amz-Signature=abc"
REDACT = Redactor.of(DEFAULT_REDACT)

# Targets mitmproxy's HTTP/1 parser lets through in absolute-form (README, "What mitmproxy
# refuses", lists the ones it refuses before any addon runs: space, tab, non-ASCII).
ABSOLUTE_FORM_CASES = [
    b"/a/./b/../c",
    b"/%7euser/%2fx",
    b"/q?x=%zz",
    b'/a"b<>^`{|}\\',
    b"/a\x01b\x7f",
    b"/a#frag",
    b"/a?b#c<d>",
    b"/clean/path?x=1",
    SIGNED,
]
# Origin-form (reverse mode) also lets raw non-ASCII through.
ORIGIN_FORM_CASES = [*ABSOLUTE_FORM_CASES, b"/caf\xc3\xa9", b"/raw\xff"]
# What an HTTP/2 client can put in :path; mitmproxy copies it into the HTTP/1 request line.
H2_PATHS = [
    b"/a b",
    b"/t\tx",
    b"/caf\xc3\xa9",
    b"/n\x00x",
    b"/c\r\nX-Injected: 1",
    b"/s\r\n\r\nGET /smuggled HTTP/1.1",
    b"/raw\xff",
    b"/a/./b/../c",
    b"/clean",
]


def text(target: bytes) -> str:
    return target.decode("utf-8", "surrogateescape")


def canonical(target: bytes) -> bytes:
    return canonicalize(target, POLICY, form="origin").url.encode("ascii")


def valid(target: bytes) -> bool:
    try:
        # Fragment included: a fragment is stripped, but an invalid one is still invalid.
        canonicalize(
            target, replace(POLICY, strict=True).with_rules("-strip-fragment"), form="origin"
        )
    except InvalidTarget:
        return False
    return True


def expected_action(mode: str, target: bytes, method: str = "GET") -> str:
    if canonical(target) == target:
        return "unchanged"
    if mode == "reject" and not valid(target):
        return "rejected"
    if target == SIGNED:
        return "skipped-signed"
    if mode == "audit":
        return "audited"
    if mode == "redirect" and method in ("GET", "HEAD"):
        return "redirected"
    return "rewritten"


def readme_findings() -> set[str]:
    """The finding names in README's Findings table."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("\n### Findings\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([a-z0-9-]+)`", line.split("|")[1]))
    return names


FINDINGS = readme_findings()


def check_log(
    proxy: Proxy,
    sent: list[tuple[str, bytes, str]],
    first: int = 0,
    received: dict[bytes, bytes] | None = None,
    host: str | None = None,
) -> None:
    """One record per request that was not unchanged, in order, each matching what happened.

    ``received`` maps a sent target to the target the upstream received for it; ``host`` is
    the host every record must name, whatever its action.
    """
    expected = [(m, t, a) for m, t, a in sent if a != "unchanged"]
    records = wait_for_records(proxy, first + len(expected))[first:]
    assert len(records) == len(expected)
    for record, (method, target, action) in zip(records, expected, strict=True):
        assert record["method"] == method
        assert record["before"] == REDACT.text(text(target))
        assert record["action"] == action
        assert record["client"].startswith("127.0.0.1:")
        assert record["ts"].endswith("Z")
        # findings hold findings only: the rule that refused a target has its own field.
        assert {f["rule"] for f in record["findings"]} <= FINDINGS
        if host is not None:
            assert record["host"] == host
        if action == "rejected":
            assert record["after"] is None
            assert record["rejected_by"] and record["reason"]
            assert record["rejected_by"] in record["reason"]
        else:
            assert "rejected_by" not in record
            assert record["after"] == REDACT.text(text(canonical(target)))
            assert record["edits"]
        if received is not None and action == "rewritten":
            assert record["after"].encode("ascii") == received[target]


def wait_for_records(proxy: Proxy, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        records = proxy.records()
        if len(records) >= n or time.monotonic() > deadline:
            return records
        time.sleep(0.02)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    with upstream_server() as up:
        yield up


@pytest.fixture(scope="module")
def tls_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    with upstream_server(tmp_path_factory.mktemp("tls")) as up:
        yield up


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """``urlsan proxy`` in rewrite mode, forward proxy, trusting the local TLS upstream."""
    tmp = tmp_path_factory.mktemp("proxy")
    with running_proxy(tmp, "--set", "ssl_insecure=true", "--set", "connection_strategy=lazy") as p:
        yield p


@pytest.mark.parametrize(
    "mode, max_inline",
    [
        ("rewrite", None),
        ("audit", None),
        ("reject", None),
        ("redirect", None),
        # Every target through the worker process: the same answers, the same records.
        ("rewrite", 0),
        ("reject", 0),
    ],
)
def test_forward_mode_raw_http1(
    tmp_path: Path, upstream: Upstream, mode: str, max_inline: int | None
) -> None:
    upstream.take()
    sent = []
    received: dict[bytes, bytes] = {}
    options = ["--set", f"urlsan_mode={mode}"]
    if max_inline is not None:
        options += ["--set", f"urlsan_max_inline={max_inline}"]
    with running_proxy(tmp_path, *options) as proxy:
        for method in ("GET", "POST"):
            for target in ABSOLUTE_FORM_CASES:
                url = f"http://127.0.0.1:{upstream.port}".encode() + target
                body = b"x" if method == "POST" else b""
                request = b"%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n\r\n%s"
                response = raw_request(
                    proxy.port, request % (method.encode(), url, upstream.port, len(body), body)
                )
                action = expected_action(mode, target, method)
                sent.append((method, target, action))
                got = upstream.take()
                forwarded = [r.target for r in got]
                received.update((target, t) for t in forwarded)
                if action == "rejected":
                    assert status(response) == 400, target
                    assert b"urlsan: " in response
                    assert forwarded == []
                elif action == "redirected":
                    assert status(response) == 308, target
                    assert header(response, "Location") == text(canonical(target))
                    assert forwarded == []
                elif action in ("audited", "skipped-signed", "unchanged"):
                    assert status(response) == 200, target
                    assert forwarded == [target]
                else:
                    assert status(response) == 200, target
                    assert forwarded == [canonical(target)]
                if mode != "audit" and target != SIGNED:
                    assert all(WIRE_SAFE.fullmatch(t) for t in forwarded)
        # The same host in every record, the port included, rejected or not (one report row).
        check_log(proxy, sent, host=f"127.0.0.1:{upstream.port}")
    # Independent of core, the cases everyone agrees on.
    by_target = {(m, t): a for m, t, a in sent}
    assert by_target[("GET", b"/clean/path?x=1")] == "unchanged"
    assert by_target[("GET", SIGNED)] == "skipped-signed"
    if mode == "rewrite":
        assert canonical(b"/a/./b/../c") == b"/a/c"
    assert "urlsan:" in "\n".join(proxy.output)  # the shutdown summary


def test_reverse_mode_with_mitmdump_script(tmp_path: Path, upstream: Upstream) -> None:
    """``mitmdump -s addon/script.py --mode reverse:URL``, origin-form targets."""
    upstream.take()
    sent = []
    with running_proxy(
        tmp_path, "--mode", f"reverse:{upstream.origin}", command=mitmdump_script_command
    ) as proxy:
        for target in ORIGIN_FORM_CASES:
            response = raw_request(
                proxy.port, b"GET %s HTTP/1.1\r\nHost: Proxy.Example\r\n\r\n" % target
            )
            assert status(response) == 200
            action = expected_action("rewrite", target)
            sent.append(("GET", target, action))
            forwarded = [r.target for r in upstream.take()]
            assert forwarded == [
                target if action in ("unchanged", "skipped-signed") else canonical(target)
            ]
        check_log(proxy, sent)
    assert b"/caf%C3%A9" in [canonical(t) for t in ORIGIN_FORM_CASES]


def test_host_is_canonicalized_consistently(proxy: Proxy, upstream: Upstream) -> None:
    upstream.take()
    url = f"http://LocalHost:{upstream.port}/x".encode()
    response = raw_request(
        proxy.port, b"GET %s HTTP/1.1\r\nHost: LocalHost:%d\r\n\r\n" % (url, upstream.port)
    )
    assert status(response) == 200
    (got,) = upstream.take()
    assert got.header(b"Host") == f"localhost:{upstream.port}".encode()
    assert got.target == b"/x"


@pytest.mark.skipif(not shutil.which("curl"), reason="curl not installed")
def test_curl_path_as_is(proxy: Proxy, upstream: Upstream) -> None:
    upstream.take()
    first = len(proxy.records())
    out = subprocess.run(
        [
            "curl", "-sS", "--path-as-is", "-x", proxy.url,
            f"http://127.0.0.1:{upstream.port}/a/./b/../%7ec?q=%zz",
        ],
        capture_output=True,
        timeout=20,
        check=True,
    )  # fmt: skip
    assert out.stdout == b"ok\n"
    assert [r.target for r in upstream.take()] == [b"/a/~c?q=%25zz"]
    check_log(proxy, [("GET", b"/a/./b/../%7ec?q=%zz", "rewritten")], first)


@pytest.mark.skipif(not shutil.which("curl"), reason="curl not installed")
def test_https_through_the_proxy_with_its_ca(proxy: Proxy, tls_upstream: Upstream) -> None:
    tls_upstream.take()
    out = subprocess.run(
        [
            "curl", "-sS", "--path-as-is", "--cacert", str(proxy.ca), "-x", proxy.url,
            f"https://localhost:{tls_upstream.port}/a/../b/%7e",
        ],
        capture_output=True,
        timeout=20,
        check=True,
    )  # fmt: skip
    assert out.stdout == b"ok\n"
    assert [r.target for r in tls_upstream.take()] == [b"/b/~"]


def test_httpx_ordinary_path(proxy: Proxy, upstream: Upstream) -> None:
    import httpx

    upstream.take()
    with httpx.Client(proxy=proxy.url, trust_env=False, timeout=10) as client:
        clean = client.get(f"http://127.0.0.1:{upstream.port}/clean?x=1")
        dirty = client.get(f"http://127.0.0.1:{upstream.port}/%7euser/%2fx")
    assert clean.text == dirty.text == "ok\n"
    assert [r.target for r in upstream.take()] == [b"/clean?x=1", b"/~user/%2Fx"]


def h2_connect(proxy: Proxy, upstream: Upstream) -> tuple[ssl.SSLSocket, Any]:
    """CONNECT through the proxy, TLS with ALPN h2 trusting mitmproxy's CA, an h2 connection."""
    import h2.config
    import h2.connection

    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    authority = f"127.0.0.1:{upstream.port}".encode()
    sock.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority))
    assert status(read_response(sock)) == 200
    context = ssl.create_default_context(cafile=str(proxy.ca))
    context.set_alpn_protocols(["h2"])
    tls = context.wrap_socket(sock, server_hostname="127.0.0.1")
    assert tls.selected_alpn_protocol() == "h2"
    # The client must not clean up what it sends: that is the point.
    config = h2.config.H2Configuration(
        client_side=True,
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
        header_encoding=None,
    )
    conn = h2.connection.H2Connection(config)
    conn.initiate_connection()
    tls.sendall(conn.data_to_send())
    return tls, conn


def h2_get(tls: ssl.SSLSocket, conn: Any, authority: bytes, path: bytes) -> int | None:
    """The response status, or None when the proxy refused the stream or the connection."""
    import h2.events

    stream = conn.get_next_available_stream_id()
    headers = [(b":method", b"GET"), (b":path", path), (b":scheme", b"https")]
    conn.send_headers(stream, [*headers, (b":authority", authority)], end_stream=True)
    tls.sendall(conn.data_to_send())
    code = None
    while True:
        data = tls.recv(65536)
        if not data:
            return None
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                code = int(dict(event.headers)[b":status"])
            if isinstance(event, h2.events.ConnectionTerminated):
                return None
            if isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                return None
            if isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                return code
        tls.sendall(conn.data_to_send())


def test_http2_path_bytes_never_reach_the_request_line(
    proxy: Proxy, tls_upstream: Upstream
) -> None:
    """Every target leaving the proxy is [\\x21-\\x7e]+ and means what the client's bytes meant.

    Newer h2 releases (mitmproxy 12) refuse NUL, CR and LF in header values before any addon
    runs; a refused stream must then reach the upstream not at all.
    """
    tls_upstream.take()
    first = len(proxy.records())
    authority = f"127.0.0.1:{tls_upstream.port}".encode()
    sent = []
    for path in H2_PATHS:
        tls, conn = h2_connect(proxy, tls_upstream)
        try:
            code = h2_get(tls, conn, authority, path)
        finally:
            tls.close()
        got = tls_upstream.take()
        if code is None:
            assert got == [], path
            continue
        assert code == 200, path
        assert len(got) == 1, path  # nothing smuggled: one request line per request
        method, target, version = got[0].request_line.split(b" ")
        assert (method, version) == (b"GET", b"HTTP/1.1")
        assert WIRE_SAFE.fullmatch(target), got[0].request_line
        assert target == canonical(path)
        assert got[0].header(b"X-Injected") is None
        sent.append(("GET", path, expected_action("rewrite", path)))
    accepted = {p for _, p, _ in sent}
    # These always get through mitmproxy's HTTP/2 layer: the test must prove something.
    assert {b"/a b", b"/t\tx", b"/caf\xc3\xa9", b"/raw\xff"} <= accepted
    if b"/c\r\nX-Injected: 1" in accepted:
        assert canonical(b"/c\r\nX-Injected: 1") == b"/c%0D%0AX-Injected:%201"
    check_log(proxy, sent, first)
    assert {r["http_version"] for r in proxy.records()[first:]} == {"HTTP/2.0"}


def test_concurrent_flows_each_get_one_whole_line(proxy: Proxy, upstream: Upstream) -> None:
    first = len(proxy.records())
    n = 40

    def one(i: int) -> int:
        url = f"http://127.0.0.1:{upstream.port}/c/{i}/./x/../%7e".encode()
        request = b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (url, upstream.port)
        return status(raw_request(proxy.port, request))

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, range(n))) == [200] * n
    records = wait_for_records(proxy, first + n)[first:]
    assert sorted(r["after"] for r in records) == sorted(f"/c/{i}/~" for i in range(n))
    upstream.take()


def test_unwritable_log_stops_start_up(tmp_path: Path) -> None:
    argv = urlsan_proxy_command(
        "--listen-host", "127.0.0.1", "-p", "0", "--set", f"confdir={tmp_path / 'conf'}",
        "--set", f"urlsan_log={tmp_path / 'no' / 'such' / 'dir.jsonl'}",
    )  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=60)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert b"urlsan_log" in output
    assert b"Traceback" not in output


def test_missing_mitmproxy_is_a_clear_message(tmp_path: Path) -> None:
    blocker = tmp_path / "mitmproxy"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('No module named mitmproxy')\n")
    code = "import sys; from urlsan.cli.proxy import proxy_main; sys.exit(proxy_main([]))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        timeout=60,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        f"urlsan proxy needs mitmproxy 11 or 12: {sys.executable} -m pip install "
        "'mitmproxy>=11.0.2,<13'"
    )


LONG_DIRTY = b"/long/./" + b"x%7e/" * 400 + b"../end?q=%zz"  # 2 KB: over urlsan_max_inline=64
OVERSIZE_SAFE = b"/big/" + b"a" * 9000  # over urlsan_max_target=4096, visible ASCII
OVERSIZE_UNSAFE = b"/big/\x01" + b"a" * 9000  # a control character: never forwarded unchecked


@pytest.mark.parametrize("mode", ["rewrite", "reject"])
def test_long_targets(tmp_path: Path, upstream: Upstream, mode: str) -> None:
    """Over urlsan_max_inline: canonicalized in the worker; over urlsan_max_target: 414 in
    reject mode, else forwarded unchanged if wire-safe (skipped-oversize) and 414 if not.
    """
    upstream.take()
    options = ["--mode", f"reverse:{upstream.origin}", "--set", f"urlsan_mode={mode}"]
    options += ["--set", "urlsan_max_inline=64", "--set", "urlsan_max_target=4096"]
    with running_proxy(tmp_path, *options) as proxy:
        answers = {}
        for target in (LONG_DIRTY, OVERSIZE_SAFE, OVERSIZE_UNSAFE, b"/short/./%7e"):
            request = b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (target, upstream.port)
            answers[target] = (
                raw_request(proxy.port, request),
                [r.target for r in upstream.take()],
            )
        records = wait_for_records(proxy, 4)
    response, forwarded = answers[LONG_DIRTY]
    if mode == "reject":
        assert status(response) == 400  # a stray % is invalid
        assert forwarded == []
    else:
        assert status(response) == 200
        assert forwarded == [canonical(LONG_DIRTY)]
    response, forwarded = answers[OVERSIZE_SAFE]
    assert status(response) == (414 if mode == "reject" else 200)
    assert forwarded == ([] if mode == "reject" else [OVERSIZE_SAFE])
    response, forwarded = answers[OVERSIZE_UNSAFE]
    assert status(response) == 414 and forwarded == []
    assert b"urlsan_max_target" in response
    response, forwarded = answers[b"/short/./%7e"]
    assert status(response) == 200 and forwarded == [b"/short/~"]

    by_action = [(r["action"], r.get("rejected_by")) for r in records]
    long_action = ("rejected", "encode-stray-percent") if mode == "reject" else ("rewritten", None)
    oversize = ("rejected", "urlsan_max_target")
    assert by_action == [
        long_action,
        oversize if mode == "reject" else ("skipped-oversize", None),
        oversize,
        ("rewritten", None),
    ]
    assert {r["host"] for r in records} == {f"127.0.0.1:{upstream.port}"}
    for record in records[1:3]:
        assert record["after"] is None and record["edits"] == []
        assert len(record["before"]) == 8192 and record["truncated"] is True
    if mode == "rewrite":
        assert records[0]["after"] == canonical(LONG_DIRTY).decode()


# Loaded into the proxy's worker process only (a spawned multiprocessing child), through
# PYTHONPATH: check_target waits for a gate file when the target carries the marker.  So the
# test knows, without any timing, that a long target is still being canonicalized.
_GATED_WORKER = """
import os, sys, time
if "--multiprocessing-fork" in sys.argv:
    import urlsan.addon.target as target

    _check = target.check_target

    def check_target(raw, *args, **kwargs):
        if b"/gated/" in raw:
            gate = os.environ["URLSAN_TEST_GATE"]
            open(gate + ".waiting", "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.01)
        return _check(raw, *args, **kwargs)

    target.check_target = check_target
"""


def test_short_requests_are_served_while_a_long_target_is_canonicalized(
    tmp_path: Path, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_GATED_WORKER)
    gate = tmp_path / "gate"
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("URLSAN_TEST_GATE", str(gate))
    upstream.take()
    long_target = b"/gated/" + b"a/./" * 4000  # 16 KB: over urlsan_max_inline
    with running_proxy(tmp_path, "--mode", f"reverse:{upstream.origin}") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=60) as slow:
            slow.sendall(b"GET %s HTTP/1.1\r\nHost: a\r\n\r\n" % long_target)
            waiting = tmp_path / "gate.waiting"
            deadline = time.monotonic() + 60
            while not waiting.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert waiting.exists(), "the long target never reached the worker"
            # While the worker holds the long target, other clients are answered.
            for i in range(5):
                response = raw_request(proxy.port, b"GET /s/%d/./x HTTP/1.1\r\nHost: a\r\n\r\n" % i)
                assert status(response) == 200
            assert not gate.exists()  # so the long one is still in the worker, unanswered
            slow.setblocking(False)
            with pytest.raises(BlockingIOError):
                slow.recv(1)
            slow.setblocking(True)
            gate.touch()
            assert status(read_response(slow)) == 200
        forwarded = [r.target for r in upstream.take()]
    assert forwarded == [*(b"/s/%d/x" % i for i in range(5)), canonical(long_target)]


# --- a first hour: the start-up line, misspelt options, the status of every record


def test_start_up_line_and_statuses_of_a_real_proxy(tmp_path: Path) -> None:
    """One line says what the proxy does; each record has its response's status: the
    upstream's, urlsan's own, or none for a request the proxy stopped before answering."""
    for name in ("redirect", "stopped"):
        (tmp_path / name).mkdir()
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    silent_port = silent.getsockname()[1]
    with upstream_server() as upstream:
        with running_proxy(
            tmp_path, "--mode", f"reverse:http://127.0.0.1:{upstream.port}"
        ) as proxy:
            line = (
                f"urlsan: rewrite mode, profile rfc3986, the profile's rules, audit log {proxy.log}"
            )
            for _ in range(100):  # it follows mitmproxy's "listening at"
                if any(line in shown for shown in proxy.output):
                    break
                time.sleep(0.1)
            assert any(line in shown for shown in proxy.output), proxy.output
            response = raw_request(proxy.port, b"GET /a/./b HTTP/1.1\r\nHost: h\r\n\r\n")
            assert response.startswith(b"HTTP/1.1 200")
        with running_proxy(
            tmp_path / "redirect",
            "--mode",
            f"reverse:http://127.0.0.1:{upstream.port}",
            "--set",
            "urlsan_mode=redirect",
        ) as redirecting:
            response = raw_request(redirecting.port, b"GET /c/./d HTTP/1.1\r\nHost: h\r\n\r\n")
            assert response.startswith(b"HTTP/1.1 308 Permanent Redirect\r\n"), response[:80]
    with running_proxy(
        tmp_path / "stopped", "--mode", f"reverse:http://127.0.0.1:{silent_port}"
    ) as stopped:
        client = socket.create_connection(("127.0.0.1", stopped.port))
        client.sendall(b"GET /e/./f HTTP/1.1\r\nHost: h\r\n\r\n")
        silent.settimeout(30)
        held, _ = silent.accept()
        held.settimeout(30)
        forwarded = b""
        while b"\r\n\r\n" not in forwarded:  # decided and forwarded: now the proxy stops
            forwarded += held.recv(4096)
        assert forwarded.startswith(b"GET /e/f ")
    client.close()
    held.close()
    silent.close()
    assert [(r["before"], r["status"]) for r in proxy.records()] == [("/a/./b", 200)]
    assert [(r["before"], r["status"]) for r in redirecting.records()] == [("/c/./d", 308)]
    assert [(r["before"], r["status"]) for r in stopped.records()] == [("/e/./f", None)], (
        stopped.output
    )


def test_a_misspelt_option_stops_mitmdump_with_the_script(tmp_path: Path) -> None:
    """The mitmproxy way (-s addon/script.py) refuses it too, once the addon has loaded."""
    argv = mitmdump_script_command(
        "--listen-host", "127.0.0.1", "-p", "0",
        "--set", f"confdir={tmp_path / 'confdir'}",
        "--set", "urlsan_prfile=crawler",
    )  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert "unknown option urlsan_prfile: did you mean urlsan_profile?; stopping." in output
    assert "urlsan: rewrite mode" not in output
