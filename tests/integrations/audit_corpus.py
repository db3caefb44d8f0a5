"""Recorded traffic for the cluster audits (`urlsan.spark.audit`, `urlsan.dask.audit`) and the
records ``urlsan audit`` writes for it, which they must equal.

An access log with what an audit looks for (dot segments, escapes of unreserved characters, a
secret, a signed URL, an escaped slash, a byte that is not UTF-8 (escaped as nginx writes it, and
raw), a control character, an
absolute-form target, a target longer than ``max_target``), a line that is no log line, a blank
one; a WARC file and a HAR file of the same exchanges (written with the real warcio).
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

from urlsan.audit.report import Summary
from urlsan.cli.main import main

# Options of `urlsan audit`, each other than its default, as its flags and as keywords.
OPTIONS = {
    "profile": "crawler",
    "rules": "+merge-slashes",
    "mode": "reject",
    "signed": "rewrite",
    "backends": "nginx",
    "redact": "q",
}
FLAGS = [part for k, v in OPTIONS.items() for part in (f"--{k}", v)]

_TIME = "[22/Nov/2026:04:57:{:02d} +0000]"


def _line(n: int, target: str, client: str = "192.0.2.7", status: str = "200") -> bytes:
    when = _TIME.format(n % 60)
    return f'{client} - - {when} "GET {target} HTTP/1.1" {status} 3 "-" "curl/8"'.encode()


ACCESS_LINES: list[bytes] = [
    _line(0, "/%7euser/./a?token=s3cret"),
    _line(1, "/clean"),
    _line(2, "/a%2fb", client="192.0.2.8"),
    _line(3, "/s?X-Amz-Signature=ab&X-Amz-Credential=c&%7e=1", status="-"),
    b"not a log line",
    b"",
    _line(4, "/caf\\xC3\\xA9/\\xFF/x/../y"),  # nginx's escapes: UTF-8, and a byte that is none
    _line(5, "/tab\\x09here/%2e%2E/"),
    _line(6, "http://Example.COM:80/abs/./path"),
    _line(7, "/" + "a/./" * 40 + "?q=%7e"),
    _line(8, "/%zz/..%2f..%2fetc/passwd"),
    _line(9, "/raw/./x").replace(b"raw", b"r\xffw"),  # a raw byte that is not UTF-8
]
ACCESS_LOG = b"\n".join(ACCESS_LINES) + b"\n"

# (URL, status): a dirty target, a clean one, a secret, an escaped slash, no response.
EXCHANGES = [
    ("http://example.com/%7euser/./a?token=s3cret", 200),
    ("http://example.com/clean", 200),
    ("https://shop.example/a%2fb?b=2", 404),
    ("http://example.com/x/../y", None),
]
DATE = "2026-11-22T04:57:58Z"


def warc(gzipped: bool = True) -> bytes:
    """EXCHANGES as a WARC file: each request record, then its response record."""
    from warcio.statusandheaders import StatusAndHeaders  # type: ignore[import-untyped]
    from warcio.warcwriter import WARCWriter  # type: ignore[import-untyped]

    out = io.BytesIO()
    writer = WARCWriter(out, gzip=gzipped)
    for url, status in EXCHANGES:
        host, _, path = url.split("://", 1)[1].partition("/")
        headers = StatusAndHeaders(f"GET /{path} HTTP/1.1", [("Host", host)], is_http_request=True)
        request = writer.create_warc_record(
            url, "request", payload=io.BytesIO(b""), http_headers=headers,
            warc_headers_dict={"WARC-Date": DATE},
        )  # fmt: skip
        writer.write_record(request)
        if status is not None:
            response = writer.create_warc_record(
                url, "response", payload=io.BytesIO(b"body"),
                http_headers=StatusAndHeaders(f"{status} X", [], protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Date": DATE},
            )  # fmt: skip
            writer.write_record(response)
    return out.getvalue()


def har() -> bytes:
    """EXCHANGES as a HAR file."""
    entries = [
        {
            "startedDateTime": "2026-11-22T04:57:58.000Z",
            "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1", "headers": []},
            "response": {"status": status or 0},
        }
        for url, status in EXCHANGES
    ]
    return json.dumps({"log": {"version": "1.2", "entries": entries}}).encode()


def write_files(tmp: Path) -> dict[str, Path]:
    """The access log (gzipped), the WARC file and the HAR file, in ``tmp``."""
    paths = {
        "access-log": tmp / "access.log.gz",
        "warc": tmp / "crawl.warc.gz",
        "har": tmp / "browse.har",
    }
    paths["access-log"].write_bytes(gzip.compress(ACCESS_LOG))
    paths["warc"].write_bytes(warc())
    paths["har"].write_bytes(har())
    return paths


def urlsan_audit(tmp: Path, paths: list[Path], *options: str) -> list[bytes]:
    """The lines ``urlsan audit`` writes for ``paths``, in order."""
    out = tmp / "urlsan-audit.jsonl"
    status = main(["audit", "-q", "-o", str(out), *options, *map(str, paths)])
    assert status in (0, 3)  # 3: the line that is no log line is counted
    return out.read_bytes().splitlines()


def without_nulls(value: Any) -> Any:
    """A column's value as the record writes it: a struct's null fields are fields it lacks."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def reported(*logs: Path) -> dict[str, Any]:
    """What ``urlsan report`` makes of ``logs`` (its ``--json``, but for the file names)."""
    summary = Summary()
    for log in logs:
        with log.open("rb") as stream:
            summary.read(stream, log.name)
    assert not summary.not_audit_logs and not summary.malformed
    out: dict[str, Any] = summary.as_dict()
    out.pop("sources")
    return out
