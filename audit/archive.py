"""Web archives read back as requests for ``urlsan audit``: WARC files and CDX / CDXJ indexes.

    read_warc  WARC files (Heritrix, wget, warcprox, Browsertrix): the request records, each with
               the status of its response record where the file has one; through warcio
    read_cdx   CDX indexes (a ``" CDX N b a m s k r M S V g"`` header names the fields; 11 fields
               without one): one request per line, its original URL and status
    read_cdxj  CDXJ indexes (pywb, ``urlkey timestamp {json}``): the JSON's url, status, method

Each yields the `Request` a HAR entry of the same request gives (scheme, host, origin-form
target), so that ``urlsan audit`` writes the same record for either.  warcio is imported only
when a WARC file is read (`urlsan.audit.sources.missing_reader` says how to install it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

from .traffic import CUT_LINE, Item, Request, Unreadable, split_url

_WARC_HEAD = re.compile(rb"WARC/1\.[01]\r?\n")
_CDXJ_LINE = re.compile(rb"\S+ \d{4,14} \{")
_CDX_LINE = re.compile(rb"(?: CDX [A-Za-z ]+|\S+ \d{4,14} \S+ \S+ (?:\d{3}|-) .*)\r?\n?")
# The fields of a CDX line without a header: CDX 11 ("N b a m s k r M S V g").
_CDX11 = ["N", "b", "a", "m", "s", "k", "r", "M", "S", "V", "g"]


def detect(head: bytes) -> str | None:
    """``warc``, ``cdxj``, ``cdx`` or None, from the first bytes of an (uncompressed) stream."""
    if _WARC_HEAD.match(head):
        return "warc"
    first = head.split(b"\n", 1)[0]
    if _CDXJ_LINE.match(first):
        return "cdxj"
    if _CDX_LINE.fullmatch(first + b"\n"):
        return "cdx"
    return None


def _timestamp(value: str | None) -> float | None:
    """A WARC-Date (ISO 8601) or a 14-digit archive timestamp as seconds since the epoch."""
    if not value:
        return None
    try:
        if value.isdigit():
            padded = value.ljust(14, "0")[:14]
            moment = datetime.strptime(padded, "%Y%m%d%H%M%S")
        else:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _status(value: object) -> int | None:
    """A response status of 100 to 999; archives write "-" or nothing for none."""
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    return int(text) if text.isdigit() and 100 <= int(text) <= 999 else None


def _from_url(url: str, ts: float | None, status: int | None, method: str, where: str) -> Item:
    """A request for ``url`` as a HAR entry of it reads (the index keeps no headers)."""
    scheme, authority, target = split_url(url)
    if not scheme or authority is None:
        return Unreadable(where, f"not an absolute URL: {url[:200]!r}")
    return Request(
        ts=ts,
        client="",
        method=method,
        scheme=scheme,
        host=authority,
        target=target.encode("utf-8", "surrogateescape"),
        http_version="",
        where=where,
        status=status,
    )


# --- WARC


def read_warc(stream: IO[bytes], name: str) -> Iterator[Item]:
    """The request records of a WARC file, each with its response's status (the response
    record it is concurrent to, or the one for the same URI written next to it).  Raises
    `ImportError` without warcio.

    A file cut short (a copy broken off, a crawl still writing) ends the reading where the
    cut is: the records before it are read, the one it goes through is counted.
    """
    from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]
    from warcio.exceptions import ArchiveLoadFailed  # type: ignore[import-untyped]

    requests: list[tuple[Request, str, str]] = []  # each with its response's id and its URI
    statuses: dict[str, int | None] = {}  # a response's record id, and "uri:" its URI → status
    number = 0
    cut: Unreadable | None = None
    records = ArchiveIterator(stream, arc2warc=True)
    try:
        for record in records:
            number += 1
            cut = _cut_short(record, records, f"{name}: record {number}")
            if cut is not None:
                break
            item = _warc_record(record, f"{name}: record {number}", statuses)
            if isinstance(item, Unreadable):
                yield item
            elif item is not None:
                requests.append(item)
        else:
            cut = _left_over(records, name)
    # A torn or corrupt file: what was read counts.  warcio fails on some torn records with
    # errors of its own making (AttributeError on a header block cut short), not only its own.
    except (ArchiveLoadFailed, ValueError, AttributeError, EOFError, OSError) as e:
        # warcio's AttributeError ("'NoneType' object has no attribute ...") says nothing more.
        detail = "" if isinstance(e, AttributeError) else f" (warcio: {e})"
        cut = Unreadable(f"{name}: record {number + 1}", f"cut short or corrupt{detail}")
    for request, concurrent, uri in requests:
        status = statuses.get(concurrent)
        yield request._replace(status=statuses.get("uri:" + uri) if status is None else status)
    if cut is not None:  # last: where the reading stopped
        yield cut


def _cut_short(record: Any, records: Any, where: str) -> Unreadable | None:
    """The record if the file ends inside it: its header block without the Content-Length
    every WARC record has (WARC 1.1 §5.3), or its block shorter than the Content-Length says.
    warcio reads either without a word; its record is then read to its end, as it would be
    when the next one is asked for."""
    if record.format.startswith("warc") and record.length is None:
        return Unreadable(where, "cut short: the file ends inside its header")
    records.read_to_end()
    missing = getattr(record.raw_stream, "limit", 0)  # what its LimitReader did not get
    if missing > 0:
        return Unreadable(
            f"{where} at byte {records.get_record_offset():,}",
            f"cut short: the last {missing:,} bytes of its block are missing",
        )
    return None


def _left_over(records: Any, name: str) -> Unreadable | None:
    """Bytes after the last record that warcio read but made no record of: a file cut inside
    a record's first lines (warcio then stops as at the end of the file)."""
    end, read = records.offset, records.fh.tell()
    if read > end:
        return Unreadable(f"{name}: byte {end:,}", f"cut short: {read - end:,} bytes of a record")
    return None


def _warc_record(
    record: Any, where: str, statuses: dict[str, int | None]
) -> tuple[Request, str, str] | Unreadable | None:
    """A request record's request, with the id of its response and its URI; a response
    record's status goes into ``statuses``; other records give nothing."""
    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
    if record.rec_type == "response":
        http = record.http_headers
        status = _status(http.get_statuscode()) if http else None
        statuses[record.rec_headers.get_header("WARC-Record-ID") or ""] = status
        statuses.setdefault("uri:" + uri, status)
        return None
    if record.rec_type != "request":
        return None
    item = _warc_request(record, where)
    if isinstance(item, Unreadable):
        return item
    return item, record.rec_headers.get_header("WARC-Concurrent-To") or "", uri


def _warc_request(record: Any, where: str) -> Item:
    """One WARC request record: its request line and headers as sent."""
    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
    headers = record.http_headers
    if headers is None:
        return Unreadable(where, "a request record without an HTTP request")
    method = headers.protocol or ""
    target, _, version = headers.statusline.rpartition(" ")
    if not target:  # HTTP/0.9 has no version
        target, version = version, ""
    scheme, authority, origin = split_url(uri.strip("<>"))
    absolute = target if not target.startswith("/") and "://" in target else None
    if absolute is not None:
        _, authority_in_line, _ = split_url(absolute)
        target_bytes = absolute.encode("utf-8", "surrogateescape")
    else:
        authority_in_line = None
        target_bytes = (target or origin).encode("utf-8", "surrogateescape")
    return Request(
        ts=_timestamp(record.rec_headers.get_header("WARC-Date")),
        client="",  # WARC-IP-Address is the server's
        method=method,
        scheme=scheme,
        host=headers.get_header("Host") or authority,
        target=target_bytes,
        http_version=version,
        where=where,
        authorization=headers.get_header("Authorization"),
        authority=authority_in_line,
    )


# --- CDX and CDXJ


def read_cdx(stream: IO[bytes], name: str) -> Iterator[Item]:
    """One request per CDX line: the original URL (field ``a``) and status (``s``)."""
    fields = _CDX11
    for number, raw in enumerate(stream, 1):
        line = raw.rstrip(b"\r\n").decode("utf-8", "surrogateescape")
        if not line.strip():
            continue
        if line.startswith(" CDX "):
            fields = line.split()[1:]
            continue
        values = dict(zip(fields, line.split(" "), strict=False))
        where = f"{name}:{number}"
        if not raw.endswith(b"\n") and len(values) < len(fields):
            # The file ends inside this line: its last field read may be cut (a URL too).
            yield Unreadable(where, CUT_LINE)
            continue
        if "a" not in values:
            yield Unreadable(where, "a CDX line without its original URL")
            continue
        yield _from_url(
            values["a"], _timestamp(values.get("b")), _status(values.get("s")), "GET", where
        )


def read_cdxj(stream: IO[bytes], name: str) -> Iterator[Item]:
    """One request per CDXJ line: the JSON block's ``url``, ``status`` and ``method``."""
    for number, raw in enumerate(stream, 1):
        line = raw.rstrip(b"\r\n").decode("utf-8", "surrogateescape")
        if not line.strip() or line.startswith("!"):  # pywb's "!meta" lines
            continue
        where = f"{name}:{number}"
        key_ts, brace, block = line.partition(" {")
        try:
            doc = json.loads("{" + block) if brace else None
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get("url"), str):
            why = "not a CDXJ line (urlkey timestamp {json with url})"
            yield Unreadable(where, why if raw.endswith(b"\n") else CUT_LINE)
            continue
        method = doc.get("method")
        ts = _timestamp(key_ts.rpartition(" ")[2])
        yield _from_url(
            doc["url"],
            ts,
            _status(doc.get("status")),
            method if isinstance(method, str) else "GET",
            where,
        )
