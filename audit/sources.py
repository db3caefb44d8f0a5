"""Traffic recorded elsewhere, read back as requests for ``urlsan audit``.

One small reader per format, each yielding a neutral `Request` (or an `Unreadable` for an entry
it could not read, so that the caller counts it and goes on):

    read_flows       mitmproxy flow files (``mitmdump -w``), through mitmproxy's own `FlowReader`
    read_har         HAR 1.2 (browsers' devtools, mitmproxy's ``hardump``): log.entries[].request
    read_access_log  access logs in the combined or common format (nginx, Apache): the request line
    archive.py       WARC files (their request records) and CDX / CDXJ indexes

`detect` names the format from the first bytes; `open_source` gunzips a ``.gz`` (by its magic
bytes, not its name).  mitmproxy is imported only when a flow file is read: the rest needs
nothing but urlsan.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import IO, Any, BinaryIO, NamedTuple, cast

from .record import address, parse_time

FORMATS = ("flows", "har", "access-log", "warc", "cdx", "cdxj")
FLOWS_NEED = (
    "reading mitmproxy flow files needs mitmproxy: "
    f"{sys.executable} -m pip install 'mitmproxy>=11.0.2,<13'"
)

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


class Request(NamedTuple):
    """One request as a recording saw it; what the audit record is built from."""

    ts: float | None  # seconds since the epoch, None if the recording has no time
    client: str  # "ip:port" ("[ip]:port" for IPv6), a bare address, or "" when not recorded
    method: str
    scheme: str  # "" when not recorded (access logs)
    host: str | None  # the Host header / :authority, None when not recorded
    target: bytes  # the request-target as sent: origin-form, or as the recording holds it
    http_version: str
    where: str  # "FILE:LINE" or "FILE: entry N", for messages
    authorization: str | None = None  # the Authorization header, when recorded (signed requests)
    # An HTTP/1 absolute-form request's authority ("GET http://h/ HTTP/1.1"), when recorded.
    authority: str | None = None
    status: int | None = None  # the response's status code, when recorded (None: no response)


class Unreadable(NamedTuple):
    """An entry a reader could not turn into a `Request`: counted, and shown in a few examples."""

    where: str
    why: str


Item = Request | Unreadable


def open_source(path: str) -> IO[bytes]:
    """A buffered binary stream of ``path`` (``-``: standard input), gunzipped when gzip.

    Closing it closes the file too (never standard input).
    """
    raw: Any = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    return open_stream(raw)


def open_stream(raw: Any) -> IO[bytes]:
    """``raw`` (a binary file object: an open file, a file's bytes in `io.BytesIO`) as
    `open_source` gives a file: buffered, gunzipped when gzip; closing it closes ``raw``.
    ``urlsan.spark.audit`` and ``urlsan.dask.audit`` read a file's bytes through it."""
    buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        return cast(IO[bytes], _Gunzipped(buffered))
    return cast(IO[bytes], buffered)


class GzipInput(gzip.GzipFile):
    """A gzip stream read from ``compressed``; closing it closes ``compressed`` too (`GzipFile`
    leaves a file it was given open), unless that is standard input.  ``urlsan canon`` reads
    its gzip input through it as well."""

    def __init__(self, compressed: io.BufferedReader) -> None:
        super().__init__(fileobj=compressed, mode="rb")
        self._compressed = compressed

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._compressed is not sys.stdin.buffer:
                self._compressed.close()


class _Gunzipped(io.BufferedReader):
    """A gzip stream, buffered again so that `detect` can peek at the uncompressed bytes."""

    def __init__(self, compressed: io.BufferedReader) -> None:
        super().__init__(cast(Any, GzipInput(compressed)))


# A tnetstring dictionary whose first key is a short name: how every mitmproxy flow begins
# ("1234:4:type,4:http;..." or "...:7:version,..."); an access log never starts like this.
_TNETSTRING_DICT = re.compile(rb"\d{1,12}:\d{1,4}:[A-Za-z_]{1,32}[,;]")


def detect(stream: IO[bytes]) -> str | None:
    """The format of ``stream`` (a buffered reader) from its first bytes, or None if unknown."""
    head = cast(io.BufferedReader, stream).peek(4096)[:4096]
    if _TNETSTRING_DICT.match(head):
        return "flows"
    text = head.removeprefix(_BOM).lstrip()
    if text.startswith(b"{"):
        return "har"
    first_line = head.split(b"\n", 1)[0]
    if _COMBINED.match(first_line.rstrip(b"\r")):
        return "access-log"
    from . import archive  # WARC files, CDX and CDXJ indexes

    return archive.detect(head)


def read(stream: IO[bytes], fmt: str, name: str) -> Iterator[Item]:
    """The requests of ``stream`` in format ``fmt`` (one of `FORMATS`); ``name`` for messages."""
    if fmt == "flows":
        return read_flows(stream, name)
    if fmt == "har":
        return read_har(stream, name)
    if fmt == "access-log":
        return read_access_log(stream, name)
    if fmt in ("warc", "cdx", "cdxj"):
        from . import archive

        return {"warc": archive.read_warc, "cdx": archive.read_cdx, "cdxj": archive.read_cdxj}[fmt](
            stream, name
        )
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


# --- mitmproxy flow files


def read_flows(stream: IO[bytes], name: str) -> Iterator[Item]:
    """HTTP requests of a mitmproxy flow file; other flows (TCP, UDP, DNS) and CONNECTs are
    not request-targets to audit and are passed over.  Raises `ImportError` without mitmproxy.
    """
    from mitmproxy import exceptions, http
    from mitmproxy.io import FlowReader

    number = 0
    try:
        for flow in FlowReader(cast(BinaryIO, stream)).stream():
            number += 1
            if not isinstance(flow, http.HTTPFlow) or flow.request.method == "CONNECT":
                continue
            request = flow.request
            # As the addon reads it: HTTP/2's :authority, else the Host header, else the host.
            authority = None
            if request.data.authority and (request.is_http2 or request.is_http3):
                host: str | None = request.authority
            else:
                host = request.headers.get("host") or request.host or None
                authority = request.authority or None  # absolute-form
            yield Request(
                ts=request.timestamp_start,
                client=address(flow.client_conn.peername),
                method=request.method,
                scheme=request.scheme,
                host=host,
                target=request.data.path,
                http_version=request.http_version,
                where=f"{name}: flow {number}",
                authorization=request.headers.get("authorization"),
                authority=authority,
                status=flow.response.status_code if flow.response else None,
            )
    except exceptions.FlowReadException as e:
        # A torn or corrupt file: what was read counts, the rest cannot be found again.
        yield Unreadable(f"{name}: after flow {number}", f"unreadable flow data: {e}")


# --- HAR


def _split_url(url: str) -> tuple[str, str | None, str]:
    """``scheme://authority/rest`` → (scheme, authority, origin-form target)."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.isascii() or not scheme.isalpha():
        return "", None, url  # not absolute: the target as it is
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, target = rest[:cut], rest[cut:]
    if not target.startswith("/"):
        target = "/" + target  # RFC 9112 §3.2.1: an empty path is sent as "/"
    return scheme.lower(), authority or None, target


def read_har(stream: IO[bytes], name: str) -> Iterator[Item]:
    """The entries of a HAR file (one JSON document: read whole, as every HAR tool does)."""
    try:
        doc = json.loads(stream.read().removeprefix(_BOM))
        entries = doc["log"]["entries"]
        if not isinstance(entries, list):
            raise TypeError("log.entries is not a list")
    except (ValueError, KeyError, TypeError) as e:
        yield Unreadable(name, f"not a HAR file: {e}")
        return
    for number, entry in enumerate(entries, 1):
        where = f"{name}: entry {number}"
        request = entry.get("request") if isinstance(entry, dict) else None
        if not isinstance(request, dict):
            yield Unreadable(where, "no request")
            continue
        url, method = request.get("url"), request.get("method")
        if not isinstance(url, str) or not isinstance(method, str) or not url:
            yield Unreadable(where, "no request.url or request.method")
            continue
        scheme, authority, target = _split_url(url)
        if method.upper() == "CONNECT":
            continue
        version = request.get("httpVersion")
        headers = request.get("headers")
        authorization = next(
            (
                h.get("value")
                for h in (headers if isinstance(headers, list) else ())
                if isinstance(h, dict) and str(h.get("name", "")).lower() == "authorization"
            ),
            None,
        )
        yield Request(
            ts=_epoch(parse_time(entry.get("startedDateTime"))),
            client="",  # HAR records the server's address, never the client's
            method=method,
            scheme=scheme,
            host=authority,
            target=target.encode("utf-8", "surrogateescape"),
            http_version=version if isinstance(version, str) else "",
            where=where,
            authorization=authorization if isinstance(authorization, str) else None,
            status=_har_status(entry.get("response")),
        )


def _har_status(response: Any) -> int | None:
    """``response.status`` of a HAR entry; HAR writes 0 (or nothing) for no response."""
    status = response.get("status") if isinstance(response, dict) else None
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 999:
        return status
    return None


# --- access logs (combined / common format)

# nginx's and Apache's combined format, an optional virtual host first (Apache vhost_combined):
#   [vhost:port ]client ident user [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 ...
# The request line is quoted with '"' and '\' escaped; nginx writes other bytes as \xHH.
_COMBINED = re.compile(
    rb"(?:(?P<vhost>\S+) )?(?P<client>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "
    rb'"(?P<request>(?:[^"\\]|\\.)*)" (?P<status>\d{3}|-) '
)
_ESCAPE = re.compile(rb"\\(x[0-9A-Fa-f]{2}|.)")
_MONTHS = {b"JanFebMarAprMayJunJulAugSepOctNovDec"[3 * i : 3 * i + 3]: i + 1 for i in range(12)}
_CLF_TIME = re.compile(
    rb"(\d{2})/([A-Za-z]{3})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})"
)
_VERSION = re.compile(rb"HTTP/\d(?:\.\d)?")


def _unescape(match: re.Match[bytes]) -> bytes:
    code = match.group(1)
    return bytes([int(code[1:], 16)]) if len(code) == 3 and code[:1] == b"x" else code


def _clf_time(value: bytes) -> float | None:
    """``10/Oct/2000:13:55:36 -0700`` (no locale: strptime's %b would depend on it)."""
    m = _CLF_TIME.fullmatch(value)
    if not m or m.group(2) not in _MONTHS:
        return None
    day, _, year, hour, minute, second, sign, oh, om = m.groups()
    offset = timedelta(hours=int(oh), minutes=int(om)) * (-1 if sign == b"-" else 1)
    try:
        ts = datetime(
            int(year),
            _MONTHS[m.group(2)],
            int(day),
            int(hour),
            int(minute),
            int(second),
            tzinfo=timezone(offset),
        )
    except ValueError:
        return None
    return ts.timestamp()


def parse_request_line(line: bytes) -> tuple[str, bytes, str] | None:
    """``METHOD target [HTTP/x.y]`` → (method, target, version); the target may hold spaces."""
    method, sep, rest = line.partition(b" ")
    if not sep or not method.isalpha() or not rest:
        return None
    target, sep, version = rest.rpartition(b" ")
    if not sep or not _VERSION.fullmatch(version):
        target, version = rest, b""  # HTTP/0.9, or a target with a trailing space
    if not target:
        return None
    return method.decode("ascii"), target, version.decode("ascii")


def read_access_log(stream: IO[bytes], name: str) -> Iterator[Item]:
    """One request per line of a combined (or common) format access log."""
    for number, raw in enumerate(stream, 1):
        line = raw.rstrip(b"\r\n")
        if not line.strip():
            continue
        where = f"{name}:{number}"
        m = _COMBINED.match(line)
        if not m:
            yield Unreadable(where, "not a combined-format access log line")
            continue
        parsed = parse_request_line(_ESCAPE.sub(_unescape, m.group("request")))
        if parsed is None:
            # nginx logs what it could not parse (a TLS handshake on a plain port: "\x16\x03…"),
            # answered 400: no request-target to audit.
            yield Unreadable(where, "no request line")
            continue
        method, target, version = parsed
        scheme, host = "", None
        if not target.startswith(b"/") and b"://" in target:
            text = target.decode("utf-8", "surrogateescape")
            scheme, host, origin = _split_url(text)
            target = origin.encode("utf-8", "surrogateescape")
        vhost = m.group("vhost")
        if host is None and vhost:
            host = vhost.decode("utf-8", "surrogateescape")
        yield Request(
            ts=_clf_time(m.group("time")),
            client=m.group("client").decode("utf-8", "surrogateescape"),
            method=method,
            scheme=scheme,
            host=host,
            target=target,
            http_version=version,
            where=where,
            status=None if m.group("status") == b"-" else int(m.group("status")),
        )


def _epoch(ts: datetime | None) -> float | None:
    return None if ts is None else ts.timestamp()
