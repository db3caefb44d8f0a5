"""WARC files and CDX / CDXJ indexes through `urlsan audit` (audit/archive.py), written here
with the real warcio: the records equal those the same requests read from a HAR give."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from urlsan.audit import archive, sources
from urlsan.cli.main import main

warcio = pytest.importorskip("warcio", reason="WARC files need the warc extra (warcio)")
from warcio.statusandheaders import StatusAndHeaders  # noqa: E402
from warcio.warcwriter import WARCWriter  # noqa: E402

# (URL, status): a dirty target, a clean one, a secret, an escaped slash, no response.
EXCHANGES = [
    ("http://example.com/%7euser/./a?token=s3cret", 200),
    ("http://example.com/clean", 200),
    ("https://shop.example/a%2fb?b=2", 404),
    ("http://example.com/x/../y", None),
]
DATE = "2026-11-22T04:57:58Z"


def _warc(gzip: bool, responses_first: bool = False) -> bytes:
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=gzip)
    for url, status in EXCHANGES:
        rest = url.split("://", 1)[1]
        host, _, path = rest.partition("/")
        headers = StatusAndHeaders(f"GET /{path} HTTP/1.1", [("Host", host)], is_http_request=True)
        request = writer.create_warc_record(
            url,
            "request",
            payload=io.BytesIO(b""),
            http_headers=headers,
            warc_headers_dict={"WARC-Date": DATE},
        )
        records = [request]
        if status is not None:
            response = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(b"body"),
                http_headers=StatusAndHeaders(f"{status} X", [], protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": DATE},
            )
            request.rec_headers.add_header(
                "WARC-Concurrent-To", response.rec_headers.get_header("WARC-Record-ID")
            )
            records = [response, request] if responses_first else [request, response]
        for record in records:
            writer.write_record(record)
    return out.getvalue()


def _har() -> bytes:
    entries = [
        {
            "startedDateTime": "2026-11-22T04:57:58.000Z",
            "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1", "headers": []},
            "response": {"status": status or 0},
        }
        for url, status in EXCHANGES
    ]
    return json.dumps({"log": {"version": "1.2", "entries": entries}}).encode()


def _audit(tmp_path: Path, name: str, data: bytes, *args: str) -> list[dict[str, Any]]:
    source = tmp_path / name
    source.write_bytes(data)
    out = tmp_path / (name + ".jsonl")
    assert main(["audit", "-o", str(out), *args, str(source)]) == 0
    return [json.loads(line) for line in out.read_bytes().splitlines()]


def _comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The HTTP version and the Host header are in a WARC and not in this HAR.
    return [{k: v for k, v in r.items() if k not in ("http_version",)} for r in records]


@pytest.mark.parametrize("name", ["crawl.warc.gz", "crawl.warc"])
def test_warc_records_equal_har_records(tmp_path: Path, name: str) -> None:
    warc = _audit(tmp_path, name, _warc(gzip=name.endswith(".gz")), "--mode", "audit")
    har = _audit(tmp_path, "crawl.har", _har(), "--mode", "audit")
    assert _comparable(warc) == _comparable(har)
    assert [r["before"] for r in warc] == [
        "/%7euser/./a?token=***",
        "/a%2fb?b=2",
        "/x/../y",
    ]


def test_warc_statuses(tmp_path: Path) -> None:
    for responses_first in (False, True):
        path = tmp_path / "w.warc"
        path.write_bytes(_warc(gzip=False, responses_first=responses_first))
        with sources.open_source(str(path)) as stream:
            assert sources.detect(stream) == "warc"
            requests = list(sources.read(stream, "warc", "w.warc"))
        assert [(r.host, r.target, r.status) for r in requests] == [
            ("example.com", b"/%7euser/./a?token=s3cret", 200),
            ("example.com", b"/clean", 200),
            ("shop.example", b"/a%2fb?b=2", 404),
            ("example.com", b"/x/../y", None),
        ]
        assert requests[0].scheme == "http" and requests[2].scheme == "https"
        assert requests[0].http_version == "HTTP/1.1" and requests[0].method == "GET"


def test_cdx_and_cdxj(tmp_path: Path) -> None:
    cdx = " CDX N b a m s k r M S V g\n" + "".join(
        f"key 20261122045758 {url} text/html {status or '-'} SHA1 - - 100 0 crawl.warc.gz\n"
        for url, status in EXCHANGES
    )
    cdxj = "".join(
        f"key 20261122045758 {json.dumps({'url': url, 'status': str(status or '-')})}\n"
        for url, status in EXCHANGES
    )
    har = _comparable(_audit(tmp_path, "crawl.har", _har()))
    for name, data in (("index.cdx", cdx), ("index.cdxj", cdxj)):
        records = _comparable(_audit(tmp_path, name, data.encode()))
        # An index keeps no HTTP version; everything else is as from the HAR.
        assert records == har, name
        with sources.open_source(str(tmp_path / name)) as stream:
            assert sources.detect(stream) == name.rpartition(".")[2]


def test_headerless_cdx_and_bad_lines(tmp_path: Path) -> None:
    data = (
        b"com,example)/a 20261122045758 http://example.com/a/./b text/html 301 D - - 1 0 f\njunk\n"
    )
    items = list(archive.read_cdx(io.BytesIO(data), "i.cdx"))
    assert isinstance(items[0], sources.Request) and items[0].status == 301
    assert items[0].target == b"/a/./b" and items[0].ts == 1795323478.0
    assert isinstance(items[1], sources.Unreadable)
    bad = list(archive.read_cdxj(io.BytesIO(b"k 2026 {not json\n!meta {}\n"), "i.cdxj"))
    assert len(bad) == 1 and isinstance(bad[0], sources.Unreadable)


def test_torn_warc(tmp_path: Path) -> None:
    data = _warc(gzip=False)
    items = list(archive.read_warc(io.BytesIO(data[: len(data) // 2] + b"garbage"), "t.warc"))
    assert any(isinstance(i, sources.Unreadable) for i in items)


def test_formats_are_choices() -> None:
    assert {"warc", "cdx", "cdxj"} <= set(sources.FORMATS)
