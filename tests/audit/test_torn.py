"""A torn input through `urlsan audit`: every record before the cut is written, what could not be
read is counted on stderr with its place, and the exit status is 3, for every format, gzipped or
not, detected or named.  The recordings are written by the tools that write them (mitmproxy's
FlowWriter, warcio's WARCWriter, wget), then cut."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import http.server
import io
import json
import re
import shutil
import subprocess
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from urlsan.cli.main import main

# Dirty targets, so that every request leaves an audit record: record i is request i.
TARGETS = tuple(f"/%7euser{i}/./a?b={i}" for i in range(6))
CUT_AT = 3  # the request the cut goes through (0-based)


def _access_log(targets: Sequence[str] = TARGETS) -> tuple[bytes, list[int]]:
    lines = [
        f'192.0.2.{i} - - [22/Nov/2026:04:57:5{i} +0000] "GET {t} HTTP/1.1" 200 3 "-" "curl/8"\n'
        for i, t in enumerate(targets)
    ]
    return _joined([line.encode() for line in lines])


def _cdx(targets: Sequence[str] = TARGETS) -> tuple[bytes, list[int]]:
    header = b" CDX N b a m s k r M S V g\n"
    lines = [
        f"key 2026112204575{i} http://example.com{t} text/html 200 SHA1 - - 100 0 c.warc.gz\n"
        for i, t in enumerate(targets)
    ]
    data, ends = _joined([line.encode() for line in lines])
    return header + data, [len(header) + end for end in ends]


def _cdxj(targets: Sequence[str] = TARGETS) -> tuple[bytes, list[int]]:
    lines = [
        f"com,example){t} 2026112204575{i} "
        + json.dumps({"url": f"http://example.com{t}", "status": "200"})
        + "\n"
        for i, t in enumerate(targets)
    ]
    return _joined([line.encode() for line in lines])


def _har(targets: Sequence[str] = TARGETS) -> tuple[bytes, list[int]]:
    head = b'{"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": ['
    entries = [
        json.dumps(
            {
                "startedDateTime": f"2026-11-22T04:57:5{i}.000Z",
                "request": {"method": "GET", "url": f"http://example.com{t}", "headers": []},
                "response": {"status": 200},
            }
        ).encode()
        for i, t in enumerate(targets)
    ]
    data, ends = io.BytesIO(), []
    data.write(head)
    for i, entry in enumerate(entries):
        data.write(b", " * (i > 0) + entry)
        ends.append(data.tell())
    data.write(b"]}}\n")
    return data.getvalue(), ends


def _flows(targets: Sequence[str] = TARGETS) -> tuple[bytes, list[int]]:
    mio = pytest.importorskip("mitmproxy.io")
    from mitmproxy.test import tflow, tutils

    out, ends = io.BytesIO(), []
    writer = mio.FlowWriter(out)
    for t in targets:
        writer.add(tflow.tflow(req=tutils.treq(path=t.encode()), resp=True))
        ends.append(out.tell())
    return out.getvalue(), ends


def _warc(targets: Sequence[str] = TARGETS, compress: bool = False) -> tuple[bytes, list[int]]:
    """Each response before its request, so that a complete request has its status too."""
    pytest.importorskip("warcio")
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out, ends = io.BytesIO(), []
    writer = WARCWriter(out, gzip=compress)
    for t in targets:
        url = f"http://example.com{t}"
        response = writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(b"body"),
            http_headers=StatusAndHeaders("200 OK", [], protocol="HTTP/1.1"),
        )
        request = writer.create_warc_record(
            url,
            "request",
            payload=io.BytesIO(b""),
            http_headers=StatusAndHeaders(
                f"GET {t} HTTP/1.1", [("Host", "example.com")], is_http_request=True
            ),
        )
        request.rec_headers.add_header(
            "WARC-Concurrent-To", response.rec_headers.get_header("WARC-Record-ID")
        )
        writer.write_record(response)
        writer.write_record(request)
        ends.append(out.tell())
    return out.getvalue(), ends


def _joined(records: list[bytes]) -> tuple[bytes, list[int]]:
    ends, total = [], 0
    for record in records:
        total += len(record)
        ends.append(total)
    return b"".join(records), ends


# Each format, and where its reader says the cut request was (the file's name is put first).
FORMATS: dict[str, tuple[Callable[..., tuple[bytes, list[int]]], str]] = {
    "access-log": (_access_log, f":{CUT_AT + 1}: cut short"),
    "cdx": (_cdx, f":{CUT_AT + 2}: cut short"),  # line 1 is the header
    "cdxj": (_cdxj, f":{CUT_AT + 1}: cut short"),
    "har": (_har, f": entry {CUT_AT + 1}: cut short"),
    "flows": (_flows, f": after flow {CUT_AT}: unreadable flow data"),
    # The cut exchange's response record or its request record, each a record of its own.
    "warc": (_warc, f": record {2 * CUT_AT + 2}: cut short"),
}


def _flushed_gzip(data: bytes) -> bytes:
    """``data`` as a gzip writer leaves it when cut after a flush (nginx's ``access_log ...
    gzip flush=``, a crawler killed while writing): every byte of it decompresses, and the
    member has no end (no final block, no CRC32 and ISIZE; RFC 1952 §2.2)."""
    writer = zlib.compressobj(wbits=31)
    return writer.compress(data) + writer.flush(zlib.Z_SYNC_FLUSH)


def _run(tmp_path: Path, name: str, data: bytes, fmt: str) -> tuple[int, list[Any], str]:
    """`urlsan audit` of ``data`` saved as ``name``: its exit status, records and stderr."""
    source = tmp_path / name
    source.write_bytes(data)
    out = tmp_path / (name + ".jsonl")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["audit", "-o", str(out), "--format", fmt, str(source)])
    records = [json.loads(line) for line in out.read_bytes().splitlines()] if out.exists() else []
    return status, records, err.getvalue()


def _uncut(tmp_path: Path, fmt: str) -> tuple[bytes, list[int], list[Any]]:
    data, ends = FORMATS[fmt][0]()
    status, records, err = _run(tmp_path, f"whole.{fmt}", data, "auto")
    assert (status, len(records)) == (0, len(TARGETS)), err
    return data, ends, records


def _unreadable(err: str) -> int:
    m = re.search(r"urlsan audit: (\d+) unreadable", err)
    return int(m.group(1)) if m else 0


@pytest.mark.parametrize("named", [False, True], ids=["detected", "named"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_cut_inside_a_record(tmp_path: Path, fmt: str, compress: bool, named: bool) -> None:
    data, ends, whole = _uncut(tmp_path, fmt)
    cut = (ends[CUT_AT - 1] + ends[CUT_AT]) // 2
    torn = _flushed_gzip(data[:cut]) if compress else data[:cut]
    name = f"cut.{fmt}" + ".gz" * compress
    status, records, err = _run(tmp_path, name, torn, fmt if named else "auto")
    assert records == whole[:CUT_AT]
    assert status == 3 and _unreadable(err) == 1, err
    assert str(tmp_path / name) + FORMATS[fmt][1] in err
    if compress:
        assert "the gzip data ends at uncompressed byte" in err


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_cut_right_after_a_record(tmp_path: Path, fmt: str, compress: bool) -> None:
    """Cut between two records, a plain file reads as a shorter one (but a HAR file, which is
    one JSON document): nothing is missing from what it holds.  A gzip file says it is cut."""
    data, ends, whole = _uncut(tmp_path, fmt)
    cut = ends[CUT_AT]
    torn = _flushed_gzip(data[:cut]) if compress else data[:cut]
    name = f"cut.{fmt}" + ".gz" * compress
    status, records, err = _run(tmp_path, name, torn, "auto")
    assert records == whole[: CUT_AT + 1]
    seen = compress or fmt == "har"
    assert (status, _unreadable(err)) == ((3, 1) if seen else (0, 0)), err
    if compress and fmt != "har":
        assert f"{tmp_path / name}: the gzip data ends at uncompressed byte {cut:,}" in err


@pytest.mark.parametrize("fmt", ["access-log", "har", "warc"])
def test_a_whole_gzip_file_cut_anywhere(tmp_path: Path, fmt: str) -> None:
    """Cut at any byte of one gzip member: what decompresses before the cut is read, as a
    prefix of the records, and the cut is counted once."""
    # Targets that do not compress to nothing, so that a cut's place in the compressed bytes
    # is near its place in the records.
    targets = [f"/%7e{hashlib.sha256(bytes([i])).hexdigest()}/./{i}" for i in range(200)]
    data, _ = FORMATS[fmt][0](targets)
    status, whole, err = _run(tmp_path, f"whole.{fmt}", data, "auto")
    assert (status, len(whole)) == (0, len(targets)), err
    packed = gzip.compress(data)
    for share in (0.25, 0.5, 0.9):
        cut = int(len(packed) * share)
        status, records, err = _run(tmp_path, f"cut-{share}.gz", packed[:cut], "auto")
        assert status == 3 and _unreadable(err) == 1, err
        assert records == whole[: len(records)]
        assert len(records) >= share * 0.5 * len(whole)  # deflate's blocks lag a little


def test_a_warc_gz_of_one_member_per_record(tmp_path: Path) -> None:
    """warcio (as wget and Heritrix) compresses each record as a gzip member of its own: a cut
    inside a member is counted, one exactly between two members cannot be seen."""
    _, _, whole = _uncut(tmp_path, "warc")
    data, ends = _warc(TARGETS, compress=True)
    inside = (ends[CUT_AT - 1] + ends[CUT_AT]) // 2
    for named in (False, True):
        status, records, err = _run(
            tmp_path, "cut.warc.gz", data[:inside], "warc" * named or "auto"
        )
        assert records == whole[:CUT_AT]
        assert status == 3 and _unreadable(err) == 1, err
    status, records, err = _run(tmp_path, "cut.warc.gz", data[: ends[CUT_AT]], "auto")
    assert (status, records) == (0, whole[: CUT_AT + 1]), err


@pytest.mark.parametrize("junk", [b"5:hello,", b"1:1#", b"3:a,1;1:1#}", b"0:}"])
def test_whole_data_that_is_no_flow_is_unreadable_not_a_crash(tmp_path: Path, junk: bytes) -> None:
    # A tnetstring mitmproxy reads whole, that holds no flow's state, after flows that do.
    data, ends = _flows()
    status, records, err = _run(tmp_path, "junk.flows", data[: ends[CUT_AT - 1]] + junk, "flows")
    assert len(records) == CUT_AT
    assert status == 3 and _unreadable(err) == 1, err
    assert f"junk.flows: after flow {CUT_AT}: unreadable flow data" in err


def test_an_access_log_line_cut_after_what_is_read(tmp_path: Path) -> None:
    """The last line of a file without its line end is read when it still holds every field a
    record needs (the request line and the status): a user's hand-made file often ends so."""
    data, ends, whole = _uncut(tmp_path, "access-log")
    status, records, err = _run(tmp_path, "cut.log", data[: ends[CUT_AT] - 4], "auto")
    assert (status, records) == (0, whole[: CUT_AT + 1]), err


def test_a_gzip_file_cut_in_its_first_bytes(tmp_path: Path) -> None:
    data, _, _ = _uncut(tmp_path, "access-log")
    torn = gzip.compress(data)[:12]  # the gzip header, and nothing of the log
    status, records, err = _run(tmp_path, "cut.log.gz", torn, "auto")
    assert (status, records) == (2, []) and "too little to tell the format by" in err
    assert "use --format" in err
    status, records, err = _run(tmp_path, "cut.log.gz", torn, "access-log")
    assert (status, records) == (3, []) and _unreadable(err) == 1, err
    assert f"{tmp_path / 'cut.log.gz'}: the gzip data ends at uncompressed byte 0" in err


class _Site(http.server.BaseHTTPRequestHandler):
    """Pages that link to each other, for wget to crawl."""

    def do_GET(self) -> None:
        links = "".join(f'<a href="/%7Epage{i}/./x?n={i}">p</a>' for i in range(12))
        body = f"<html><body>{links}</body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_wget_warc_cut_in_half(tmp_path: Path, site: str) -> None:
    """wget's own WARC (warcinfo, request and response records, its log as a resource), each
    record a gzip member: cut in half, the requests before the cut are read and the cut is
    counted."""
    pytest.importorskip("warcio")
    wget = shutil.which("wget")
    assert wget is not None, "wget is needed to write a WARC as a crawler does"
    subprocess.run(
        [wget, "-q", "-r", "-l", "1", "--warc-file", str(tmp_path / "crawl"), "-P",
         str(tmp_path / "site"), site],
        timeout=120,
        check=False,  # wget exits 8 when a page it followed answered an error
    )  # fmt: skip
    data = (tmp_path / "crawl.warc.gz").read_bytes()
    status, whole, err = _run(tmp_path, "whole.warc.gz", data, "auto")
    assert status == 0 and len(whole) >= 12, err
    for fmt in ("auto", "warc"):
        status, records, err = _run(tmp_path, "cut.warc.gz", data[: len(data) // 2], fmt)
        assert status == 3 and _unreadable(err) == 1, err
        assert 0 < len(records) < len(whole)
        # The requests before the cut; the status of the last one's response may be past it.
        assert [r["before"] for r in records] == [r["before"] for r in whole[: len(records)]]
        assert records[:-1] == whole[: len(records) - 1]
