"""Traffic recorded elsewhere, read back as requests for ``urlsan audit``.

One small reader per format, each yielding a neutral `Request` (or an `Unreadable` for an entry
it could not read, so that the caller counts it and goes on):

    read_flows       mitmproxy flow files (``mitmdump -w``), through mitmproxy's own `FlowReader`
    read_har         HAR 1.2 (browsers' devtools, mitmproxy's ``hardump``): log.entries[].request
    read_access_log  access logs in the combined or common format (nginx, Apache): the request line
    archive.py       WARC files (their request records) and CDX / CDXJ indexes

`detect` names the format from the first bytes; `open_source` gunzips a ``.gz`` (by its magic
bytes, not its name).  A torn input (a copy cut short, a log still being written, a gzip file
without its end) gives every record before the cut and then one `Unreadable` saying where it
stops, whatever the format: `read` adds what the gzip layer found to what the reader found.
mitmproxy and warcio are imported only when a flow file or a WARC file is read
(`missing_reader`): the rest needs nothing but urlsan.
"""

from __future__ import annotations

import gzip
import importlib
import io
import json
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from typing import IO, Any, BinaryIO, NamedTuple, cast

from . import archive
from .record import address, parse_time
from .traffic import CUT_LINE, Item, Request, Unreadable, split_url

__all__ = [
    "FORMATS",
    "NEEDS",
    "GzipInput",
    "Item",
    "Request",
    "Unreadable",
    "access_line",
    "clf_time",
    "compressed_file",
    "detect",
    "gzip_cut",
    "missing_reader",
    "open_source",
    "parse_request_line",
    "read",
    "read_access_log",
    "read_flows",
    "read_har",
]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


class Needs(NamedTuple):
    """A package a reader needs that urlsan does not install by itself."""

    module: str  # the package to import, and to install: its distribution has the same name
    extra: str  # the extra of urlsan's pyproject.toml that installs it
    what: str  # the files it reads, for the message


# The formats whose reader needs such a package.
NEEDS = {
    "flows": Needs("mitmproxy", "proxy", "mitmproxy flow files"),
    "warc": Needs("warcio", "warc", "WARC files"),
}


def missing_reader(fmt: str) -> str | None:
    """What to install to read ``fmt``, when its reader's package cannot be imported; else None.

    The message names the package to install with this Python's pip (urlsan is on no package
    index, so ``pip install 'urlsan[warc]'`` cannot work) and the extra for a checkout.
    """
    need = NEEDS.get(fmt)
    if need is None:
        return None
    try:
        importlib.import_module(need.module)
    except ImportError:
        return (
            f"reading {need.what} needs {need.module}, which is not installed: "
            f"{sys.executable} -m pip install '{_requirement(need)}' "
            f"(in a checkout of urlsan: pip install -e '.[{need.extra}]')"
        )
    return None


def _requirement(need: Needs) -> str:
    """The version range of ``need`` as urlsan's metadata (its pyproject.toml) declares it."""
    import importlib.metadata  # here: a fifth of the start-up of every `urlsan audit`

    try:
        declared = importlib.metadata.requires("urlsan") or []
    except importlib.metadata.PackageNotFoundError:  # run from a tree that was never installed
        declared = []
    marker = f'extra == "{need.extra}"'
    for line in declared:
        spec, _, markers = line.partition(";")
        if marker in markers and re.match(rf"{need.module}\b", spec.strip()):
            return spec.strip()
    return need.module


def open_source(path: str) -> IO[bytes]:
    """A buffered binary stream of ``path`` (``-``: standard input), gunzipped when gzip.

    Closing it closes the file too (never standard input).  A gzip stream that is cut short or
    corrupt ends there, as if the file ended, and `gzip_cut` says where: the records before the
    cut are read, and the one cut through is the reader's to find incomplete.
    """
    raw: Any = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    return open_stream(raw)


def open_stream(raw: Any) -> IO[bytes]:
    """``raw`` (a binary file object: an open file, a file's bytes in `io.BytesIO`) as
    `open_source` gives a file: buffered, gunzipped when gzip; closing it closes ``raw``.
    ``urlsan.spark.audit`` and ``urlsan.dask.audit`` read a file's bytes through it."""
    buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        return cast(IO[bytes], io.BufferedReader(_TornGzip(buffered)))
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


class _TornGzip(io.RawIOBase):
    """The uncompressed bytes of a gzip stream, which end where the gzip data is cut short or
    corrupt (`cut` then says so) instead of failing: what came before is still read.

    `GzipFile` raises at the end of a stream without its end-of-stream marker and trailer
    (RFC 1952 §2.2: CRC32 and ISIZE), which a copy cut short lacks, and on corrupt deflate data
    (RFC 1951), even though the bytes before were sound.
    """

    def __init__(self, compressed: io.BufferedReader) -> None:
        super().__init__()
        self.gzip = GzipInput(compressed)
        self.cut: str | None = None
        self.read_bytes = 0  # uncompressed bytes given so far

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.cut is not None:
            return 0
        try:
            data = self.gzip.read1(len(buffer))  # read() would drop what came before a cut
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            self.cut = str(e)
            return 0
        buffer[: len(data)] = data
        self.read_bytes += len(data)
        return len(data)

    def close(self) -> None:
        try:
            self.gzip.close()
        finally:
            super().close()


def gzip_cut(stream: IO[bytes]) -> str | None:
    """Where the gzip data of ``stream`` (from `open_source`) was found cut short or corrupt,
    and why; None if it was not, or is no gzip."""
    raw = getattr(stream, "raw", None)
    if isinstance(raw, _TornGzip) and raw.cut is not None:
        return (
            f"the gzip data ends at uncompressed byte {raw.read_bytes:,}, cut short or corrupt "
            f"({raw.cut})"
        )
    return None


def compressed_file(stream: IO[bytes]) -> IO[bytes]:
    """The file under a gunzipped ``stream`` (a progress bar measures it: its size is known in
    advance), or ``stream`` itself."""
    raw = getattr(stream, "raw", None)
    return cast(IO[bytes], raw.gzip) if isinstance(raw, _TornGzip) else stream


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
    return archive.detect(head)


def read(stream: IO[bytes], fmt: str, name: str) -> Iterator[Item]:
    """The requests of ``stream`` in format ``fmt`` (one of `FORMATS`); ``name`` for messages.

    Raises `ValueError` for an unknown format, `ImportError` when the format's reader needs a
    package that is not installed (`missing_reader` says which).
    """
    if fmt not in _READERS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return _with_cut(_READERS[fmt](stream, name), stream, name)


def _with_cut(items: Iterable[Item], stream: IO[bytes], name: str) -> Iterator[Item]:
    """``items``, and then where the gzip data of ``stream`` is cut, if it is: told with the
    reader's last `Unreadable` when there is one (the record the cut went through), so that one
    cut is counted once."""
    last: Item | None = None
    for item in items:
        if last is not None:
            yield last
        last = item
    cut = gzip_cut(stream)
    if cut is None:
        if last is not None:
            yield last
        return
    if isinstance(last, Unreadable):
        yield last._replace(why=f"{last.why}; {cut}")
        return
    if last is not None:
        yield last
    yield Unreadable(name, cut)


# --- mitmproxy flow files


def read_flows(stream: IO[bytes], name: str, before: int = 0) -> Iterator[Item]:
    """HTTP requests of a mitmproxy flow file; other flows (TCP, UDP, DNS) and CONNECTs are
    not request-targets to audit and are passed over.  Raises `ImportError` without mitmproxy.
    ``before``: the flows of the file before ``stream``'s first, when it starts further on.
    """
    from mitmproxy import exceptions, http
    from mitmproxy.io import FlowReader

    number = before
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
    except _NOT_A_FLOW as e:
        # Whole tnetstring data that is no flow's state (a number, a list, a dict that lacks a
        # field): mitmproxy's migration and from_state raise what they meet.
        why = f"unreadable flow data: no flow's state ({type(e).__name__}: {e})"
        yield Unreadable(f"{name}: after flow {number}", why)


_NOT_A_FLOW = (AttributeError, KeyError, TypeError, ValueError, IndexError)


# --- HAR


def read_har(stream: IO[bytes], name: str) -> Iterator[Item]:
    """The entries of a HAR file (one JSON document: read whole, as every HAR tool does).  A
    HAR file cut short is no JSON document; its entries before the cut are read one by one."""
    data = stream.read().removeprefix(_BOM)
    try:
        doc = json.loads(data)
    except ValueError as e:
        yield from _torn_har(data.decode("utf-8", "surrogateescape"), name, e)
        return
    try:
        entries = doc["log"]["entries"]
        if not isinstance(entries, list):
            raise TypeError("log.entries is not a list")
    except (KeyError, TypeError) as e:
        yield Unreadable(name, f"not a HAR file: {e}")
        return
    for number, entry in enumerate(entries, 1):
        item = _har_entry(entry, f"{name}: entry {number}")
        if item is not None:
            yield item


def _har_entry(entry: Any, where: str) -> Item | None:
    """The request of one HAR entry (None for a CONNECT: no request-target to audit)."""
    request = entry.get("request") if isinstance(entry, dict) else None
    if not isinstance(request, dict):
        return Unreadable(where, "no request")
    url, method = request.get("url"), request.get("method")
    if not isinstance(url, str) or not isinstance(method, str) or not url:
        return Unreadable(where, "no request.url or request.method")
    scheme, authority, target = split_url(url)
    if method.upper() == "CONNECT":
        return None
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
    return Request(
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


# JSON's whitespace (RFC 8259 §2: ws = *( %x20 / %x09 / %x0A / %x0D )).
_JSON_WS = re.compile(r"[ \t\n\r]*")


def _torn_har(text: str, name: str, error: ValueError) -> Iterator[Item]:
    """The entries of a HAR file that is no JSON document, up to where it stops being one: each
    complete entry of ``log.entries`` is a JSON value of its own, decoded as it comes."""
    decoder = json.JSONDecoder()
    log = _json_member(text, 0, "log", decoder)
    pos = None if log is None else _json_member(text, log, "entries", decoder)
    if pos is None or not text.startswith("[", pos):
        yield Unreadable(name, f"not a HAR file: {error}")
        return
    pos, number = pos + 1, 0
    while True:
        pos = _skip_json_ws(text, pos)
        if text.startswith("]", pos):  # every entry was read: the file stops after them
            where, why = f"{name}: after entry {number}", "cut short after its entries"
            break
        try:
            entry, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            where, why = f"{name}: entry {number + 1}", f"cut short or malformed ({e.msg})"
            break
        number += 1
        item = _har_entry(entry, f"{name}: entry {number}")
        if item is not None:
            yield item
        pos = _skip_json_ws(text, pos)
        if text.startswith(",", pos):
            pos += 1
    offset = len(text[:pos].encode("utf-8", "surrogateescape"))
    yield Unreadable(where, f"{why} at byte {offset:,}")


def _skip_json_ws(text: str, pos: int) -> int:
    return cast(re.Match[str], _JSON_WS.match(text, pos)).end()


def _json_member(text: str, pos: int, key: str, decoder: json.JSONDecoder) -> int | None:
    """Where the value of ``key`` starts in the JSON object at ``pos``, the members before it
    decoded and passed over; None when the object ends, or stops being JSON, before it."""
    pos = _skip_json_ws(text, pos)
    if not text.startswith("{", pos):
        return None
    pos += 1
    while True:
        try:
            member, pos = decoder.raw_decode(text, _skip_json_ws(text, pos))
            pos = _skip_json_ws(text, pos)
            if not isinstance(member, str) or not text.startswith(":", pos):
                return None
            pos = _skip_json_ws(text, pos + 1)
            if member == key:
                return pos
            _, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        pos = _skip_json_ws(text, pos)
        if not text.startswith(",", pos):
            return None
        pos += 1


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
# Every line of a block (`re.MULTILINE`, `findall`: one row per line, and one empty row after
# the last line end), the lines most logs are made of in fields: a virtual host or none, the
# time as nginx and Apache write it, an origin-form request-target with nothing escaped, and an
# HTTP version.  For such a line, `_COMBINED` and `parse_request_line` give the same fields:
# with that time, a line has a virtual host for both or for neither (three fields before the
# '[' of the time, or four, so that trying three first, as here, finds what `_COMBINED` finds
# trying four first, sooner where most lines have three).  Any other line comes whole, in the
# last group, for `access_line`.  Groups: virtual host (empty: none), client, time, method,
# target, version, status; the other line.
LINES = re.compile(
    rb"^(?:(?:(\S+) )??(\S+) \S+ \S+ \[(\d\d/[A-Za-z]{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] "
    rb'"([A-Za-z]+) (/[^ "\\\n]*) (HTTP/\d(?:\.\d)?)" (\d{3}|-) .*|(.*))$',
    re.MULTILINE,
)
_ESCAPE = re.compile(rb"\\(x[0-9A-Fa-f]{2}|.)")
_MONTHS = {b"JanFebMarAprMayJunJulAugSepOctNovDec"[3 * i : 3 * i + 3]: i + 1 for i in range(12)}
_CLF_TIME = re.compile(
    rb"(\d{2})/([A-Za-z]{3})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})"
)
_VERSION = re.compile(rb"HTTP/\d(?:\.\d)?")


# Why a line is no request (`access_line`).
NOT_COMBINED = "not a combined-format access log line"
NO_REQUEST_LINE = "no request line"


def _unescape(match: re.Match[bytes]) -> bytes:
    code = match.group(1)
    return bytes([int(code[1:], 16)]) if len(code) == 3 and code[:1] == b"x" else code


def clf_time(value: bytes) -> float | None:
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
        item = access_line(raw, f"{name}:{number}")
        if item is not None:
            yield item


def access_line(raw: bytes, where: str) -> Item | None:
    """The request of one access log line (``raw``, with or without its line end), or the
    `Unreadable` it is; None for a blank line.  ``where`` names the line in a message."""
    line = raw.rstrip(b"\r\n")
    if not line.strip():
        return None
    m = _COMBINED.match(line)
    if not m:
        return Unreadable(where, _bad_line(raw, NOT_COMBINED))
    parsed = parse_request_line(_ESCAPE.sub(_unescape, m.group("request")))
    if parsed is None:
        # nginx logs what it could not parse (a TLS handshake on a plain port: "\x16\x03…"),
        # answered 400: no request-target to audit.
        return Unreadable(where, NO_REQUEST_LINE)
    method, target, version = parsed
    scheme, host = "", None
    if not target.startswith(b"/") and target.find(b"://") >= 0:  # find: core.surt._ia says why
        text = target.decode("utf-8", "surrogateescape")
        scheme, host, origin = split_url(text)
        target = origin.encode("utf-8", "surrogateescape")
    vhost = m.group("vhost")
    if host is None and vhost:
        host = vhost.decode("utf-8", "surrogateescape")
    return Request(
        ts=clf_time(m.group("time")),
        client=m.group("client").decode("utf-8", "surrogateescape"),
        method=method,
        scheme=scheme,
        host=host,
        target=target,
        http_version=version,
        where=where,
        status=None if m.group("status") == b"-" else int(m.group("status")),
    )


def _bad_line(raw: bytes, why: str) -> str:
    """Why a line was not read: the last line of a file cut short has no line end (a server
    writes each line whole, with its line end)."""
    return why if raw.endswith(b"\n") else CUT_LINE


def _epoch(ts: datetime | None) -> float | None:
    return None if ts is None else ts.timestamp()


# Each format `urlsan audit` reads, and its reader: `--format` takes these names.
_READERS: dict[str, Callable[[IO[bytes], str], Iterator[Item]]] = {
    "flows": read_flows,
    "har": read_har,
    "access-log": read_access_log,
    "warc": archive.read_warc,
    "cdx": archive.read_cdx,
    "cdxj": archive.read_cdxj,
}
FORMATS = tuple(_READERS)
