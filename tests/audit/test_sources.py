"""The readers of recorded traffic (audit/sources.py), on small files made here."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from urlsan.audit import sources
from urlsan.audit.sources import Request, Unreadable

NGINX_LINES = (
    b'127.0.0.1 - - [22/Nov/2026:04:57:58 +0000] "GET /%7euser/./a HTTP/1.1" 200 3 "-" "curl/8"\n'
    # nginx escapes '"' and bytes outside 0x20-0x7e as \xHH; Apache writes \" and \\.
    b'10.0.0.2 - bob [22/Nov/2026:05:57:58 +0100] "GET /a\\x22b\\xC3\\xA9 HTTP/1.1" 404 0 "-" "x"\n'
    b'::1 - - [22/Nov/2026:04:58:00 +0000] "GET /q\\"x HTTP/1.0" 200 1 "-" "-"\n'
    # Common format (no referer, no agent); a proxy's absolute-form target; HTTP/0.9.
    b'192.0.2.1 - - [22/Nov/2026:04:58:01 -0000] "POST http://Example.COM:80/p?x=1 HTTP/1.1" 200 1'
    b"\n"
    b'192.0.2.1 - - [22/Nov/2026:04:58:02 +0000] "GET /old" 200 1 "-" "-"\n'
    # Apache vhost_combined: the virtual host first.
    b'shop.example:443 192.0.2.9 - - [22/Nov/2026:04:58:03 +0000] "GET /v HTTP/2.0" 200 1 "-" "-"\n'
    b"\n"
    b"garbage that is no log line\n"
    # What nginx logs for a TLS handshake on a plain port: no request line.
    b'192.0.2.1 - - [22/Nov/2026:04:58:04 +0000] "\\x16\\x03\\x01" 400 150 "-" "-"\n'
)


def read(data: bytes, fmt: str | None = None) -> list[Request | Unreadable]:
    stream = io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]
    found = sources.detect(stream) if fmt is None else fmt
    assert found is not None
    return list(sources.read(stream, found, "f"))


def test_access_log_lines() -> None:
    items = read(NGINX_LINES)
    got = [i for i in items if isinstance(i, Request)]
    bad = [i for i in items if isinstance(i, Unreadable)]
    assert [r.target for r in got] == [
        b"/%7euser/./a",
        b'/a"b\xc3\xa9',
        b'/q"x',
        b"/p?x=1",
        b"/old",
        b"/v",
    ]
    first = got[0]
    assert (first.client, first.method, first.http_version, first.host) == (
        "127.0.0.1",
        "GET",
        "HTTP/1.1",
        None,
    )
    assert first.ts == 1795323478.0  # 2026-11-22T04:57:58Z
    assert got[1].ts == first.ts  # +0100 counted
    assert (got[3].method, got[3].scheme, got[3].host) == ("POST", "http", "Example.COM:80")
    assert got[4].http_version == ""
    assert got[5].host == "shop.example:443"
    assert [r.status for r in got] == [200, 404, 200, 200, 200, 200]  # the response's status
    assert [b.where for b in bad] == ["f:8", "f:9"]


def test_access_log_without_a_status() -> None:
    """A request answered by no one is logged with "-" for its status: recorded as None."""
    (got,) = read(b'192.0.2.1 - - [22/Nov/2026:04:58:02 +0000] "GET /a HTTP/1.1" - 0 "-" "-"\n')
    assert isinstance(got, Request) and got.status is None


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        (b"GET / HTTP/1.1", ("GET", b"/", "HTTP/1.1")),
        (b"GET /a b HTTP/1.1", ("GET", b"/a b", "HTTP/1.1")),  # a raw space stays in the target
        (b"GET /a", ("GET", b"/a", "")),
        (b"OPTIONS * HTTP/1.1", ("OPTIONS", b"*", "HTTP/1.1")),
        (b"\x16\x03\x01", None),
        (b"GET", None),
        (b"", None),
    ],
)
def test_request_line(line: bytes, parsed: tuple[str, bytes, str] | None) -> None:
    assert sources.parse_request_line(line) == parsed


def har(entries: list[object]) -> bytes:
    return json.dumps({"log": {"version": "1.2", "entries": entries}}).encode()


def test_har_entries() -> None:
    data = har(
        [
            {
                "startedDateTime": "2026-11-22T04:57:58.250+00:00",
                "request": {
                    "method": "GET",
                    "url": "https://Shop.example/a/./b?q=1",
                    "httpVersion": "HTTP/2.0",
                    "headers": [{"name": "Authorization", "value": "AWS4-HMAC-SHA256 x"}],
                },
                "response": {"status": 301},
            },
            {
                "startedDateTime": "2026-11-22T04:57:59Z",
                "request": {"method": "GET", "url": "http://h"},
                "response": {"status": 0},  # HAR's "no response" (a blocked or failed request)
            },
            {"request": {"method": "CONNECT", "url": "https://h:443/"}},
            {"request": {"url": "http://h/"}},
            "not an entry",
        ]
    )
    items = read(b"\xef\xbb\xbf" + data)  # a byte-order mark, as Fiddler writes
    got = [i for i in items if isinstance(i, Request)]
    assert [(r.scheme, r.host, r.target) for r in got] == [
        ("https", "Shop.example", b"/a/./b?q=1"),
        ("http", "h", b"/"),  # an empty path is sent as "/"
    ]
    assert got[0].ts == 1795323478.25 and got[0].http_version == "HTTP/2.0"
    assert got[0].authorization == "AWS4-HMAC-SHA256 x" and got[0].client == ""
    assert [r.status for r in got] == [301, None]
    assert [i.where for i in items if isinstance(i, Unreadable)] == ["f: entry 4", "f: entry 5"]


@pytest.mark.parametrize("data", [b"{", b'{"log": {}}', b'{"log": {"entries": 3}}', b"[]"])
def test_not_a_har_file(data: bytes) -> None:
    [item] = read(data, "har")
    assert isinstance(item, Unreadable) and item.why.startswith("not a HAR file")


def test_detect() -> None:
    def detect(data: bytes) -> str | None:
        return sources.detect(io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]

    assert detect(b"2274:9:websocket;0:~8:response;") == "flows"
    assert detect(b"1234:4:type,4:http;") == "flows"
    assert detect(b'  {"log": {}}') == "har"
    assert detect(NGINX_LINES) == "access-log"
    assert detect(b'1:2:3::4 - - [22/Nov/2026:04:58:00 +0000] "GET / HTTP/1.1" 200 1') == (
        "access-log"  # an IPv6 client is no tnetstring
    )
    assert detect(b"\x7fELF\x02\x01\x01") is None
    assert detect(b"") is None


def test_gzip_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "access.log.1"  # rotated logs are gzipped whatever their name
    path.write_bytes(gzip.compress(NGINX_LINES))
    stream = sources.open_source(str(path))
    try:
        assert sources.detect(stream) == "access-log"
        assert sum(isinstance(i, Request) for i in sources.read(stream, "access-log", "f")) == 6
    finally:
        stream.close()


def test_flow_file_written_by_mitmproxy(tmp_path: Path) -> None:
    """A flow file made by mitmproxy's own writer (the e2e test uses a real mitmdump -w)."""
    pytest.importorskip("mitmproxy")
    from mitmproxy import io as mio
    from mitmproxy.test import tflow, tutils

    path = tmp_path / "flows"
    with open(path, "wb") as f:
        writer = mio.FlowWriter(f)
        writer.add(tflow.tflow(req=tutils.treq(path=b"/%7ea/./b", authority=b"")))
        writer.add(tflow.ttcpflow())  # not HTTP: passed over
        writer.add(tflow.tflow(req=tutils.treq(method=b"CONNECT", path=b"")))
        writer.add(tflow.tflow(req=tutils.treq(path=b"/c"), resp=tutils.tresp(status_code=503)))
    with open(path, "ab") as f:
        f.write(b"99999:4:torn")  # a torn last flow
    stream = sources.open_source(str(path))
    try:
        assert sources.detect(stream) == "flows"
        items = list(sources.read(stream, "flows", "f"))
    finally:
        stream.close()
    got = [i for i in items if isinstance(i, Request)]
    assert [r.target for r in got] == [b"/%7ea/./b", b"/c"]
    assert got[0].client == "127.0.0.1:22" and got[0].method == "GET"
    assert got[0].host == "address" and got[0].scheme == "http"  # the Host header
    assert [r.status for r in got] == [None, 503]  # no response recorded; the response's
    assert [i.where for i in items if isinstance(i, Unreadable)] == ["f: after flow 4"]


def test_the_old_import_path_of_the_traffic_values() -> None:
    """`Request` and `Unreadable` live in audit/traffic.py; code that imported them from
    audit/sources.py still gets the same classes."""
    from urlsan.audit import traffic

    assert (sources.Request, sources.Unreadable) == (traffic.Request, traffic.Unreadable)
    assert traffic.split_url("HTTP://h:8080?q") == ("http", "h:8080", "/?q")
    assert traffic.split_url("/a?b") == ("", None, "/a?b")
