"""The compiled scanner of plain records (audit/_bulk.c) against the regular expression it stands
in for (`urlsan.audit.bulk.Scanner`): the same `Scan` of every block and the same `Totals`, on
lines made to sit on the edges of the plain shape (every byte of a written record changed, cut
or doubled; long strings, non-ASCII, escapes, NUL bytes, integers of 99 to 101 digits, ``-0``,
keys out of order, CR LF), over several blocks of one log."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urlsan.audit import bulk
from urlsan.audit.record import encode_record

pytestmark = pytest.mark.skipif(bulk._compiled is None, reason="audit/_bulk.c is not built")

EDIT = {"rule": "lowercase-host", "component": "host", "start": 0, "end": 1, "before": "A",
        "after": "a"}  # fmt: skip
RECORD = {
    "ts": "2026-11-22T04:00:07.250Z", "client": "10.0.0.1:5", "method": "GET",
    "scheme": "https", "host": "a.test", "http_version": "HTTP/1.1", "profile": "rfc3986",
    "before": "/A", "after": "/a", "action": "rewritten", "edits": [EDIT, EDIT],
    "edits_truncated": 3, "findings": [], "reason": "r", "rejected_by": "limit",
    "truncated": True, "status": 200,
}  # fmt: skip
FINDINGS = [
    {"rule": "dot-segment", "component": "path", "offset": 3, "detail": ".", "occurrences": 2,
     "offsets": [3, 7], "severity": "low"},
    {"rule": "backslash", "component": "path", "offset": 0, "detail": "\\", "occurrences": 1,
     "severity": "medium"},
]  # fmt: skip
STRINGS = ["", "a", "x" * 5000, "é", "\x00", "\x1f", "\x7f", 'q"', "b\\", "a:b", "[::1]", "\n",
           "\ud800", "/\t\x08\x0c\r", "😀"]  # fmt: skip
TIMES = ["2026-11-22T04:59:59.999Z", "2026-02-30T00:61:00.000Z", "2026-11-22T04:60:00.000Z",
         "9999-99-99T99:99:59.000Z"]  # fmt: skip
CLIENTS = ["10.0.0.2", "::1", "[::1]:80", "a:", ":1", "a:b:c", "a:[", "10.0.0.1:5" * 300]
EDGE_BYTES = b'"\\:,{}[]0-nu\x00\xff\r'
INTS = [0, -0, -1, 7, 10**98, 10**99, 10**100, -(10**99), 2**63]


@st.composite
def records(draw: Any) -> bytes:
    """A record as the writer writes it, fields drawn from edge values, some left out."""
    record = dict(RECORD)
    for key in draw(st.sets(st.sampled_from(sorted(RECORD)), max_size=2)):
        if draw(st.integers(0, 3)) == 3:
            del record[key]
        elif draw(st.booleans()):
            record[key] = draw(st.one_of(st.sampled_from(STRINGS + INTS), st.none()))
    if draw(st.integers(0, 3)) == 3:
        record["ts"] = draw(st.sampled_from(TIMES))
    if draw(st.integers(0, 3)) == 3:
        record["client"] = draw(st.sampled_from(CLIENTS))
    if draw(st.integers(0, 2)) == 2:
        edit = {**EDIT, draw(st.sampled_from(sorted(EDIT))): draw(st.sampled_from(STRINGS + INTS))}
        record["edits"] = draw(st.lists(st.sampled_from([EDIT, edit]), max_size=3))
    if draw(st.integers(0, 2)) == 2:  # findings, as the writer writes them, some changed
        finding = {**FINDINGS[0], draw(st.sampled_from(sorted(FINDINGS[0]))): draw(
            st.one_of(st.sampled_from(STRINGS + INTS), st.lists(st.sampled_from(INTS)))
        )}  # fmt: skip
        record["findings"] = draw(st.lists(st.sampled_from([*FINDINGS, finding]), max_size=3))
        if draw(st.booleans()):
            record["severity"] = draw(st.sampled_from(STRINGS))
        if draw(st.booleans()):
            record["target_severity"] = "high"
            record["severity_reason"] = draw(st.sampled_from(STRINGS))
        # where the writer puts them: after the findings, before the rejection and the status
        after = ("reason", "rejected_by", "truncated", "status")
        record = {k: v for k, v in record.items() if k not in after} | {
            k: record[k] for k in after if k in record
        }
    line = json.dumps(record) if draw(st.integers(0, 5)) == 5 else encode_record(record)
    return line.encode("utf-8", "surrogatepass")


@st.composite
def lines(draw: Any) -> bytes:
    """A line of a log: a record, or one with a byte changed, taken out or put in."""
    line = draw(records())
    how = draw(st.integers(0, 8))
    if how >= 6 and line:
        at = draw(st.integers(0, len(line) - 1))
        byte = bytes([draw(st.one_of(st.sampled_from(EDGE_BYTES), st.integers(0, 255)))])
        line = (line[:at] + byte + line[at + 1 :], line[:at] + line[at + 1 :],
                line[:at] + byte + line[at:])[how - 6]  # fmt: skip
    line = line.replace(b"\n", b"")
    return line + draw(st.sampled_from([b"\n", b"\n", b"\n", b"\r\n"]))


def scan_all(scanner: Any, blocks: list[bytes], seconds: bool) -> list[Any]:
    out = [tuple(scanner.scan(block, seconds)) for block in blocks]
    out.append(tuple(scanner.take()))
    out.append(tuple(scanner.scan(b"".join(blocks), not seconds)))  # seen before: no firsts
    out.append(tuple(scanner.take()))
    return out


@settings(max_examples=400, deadline=None)
@given(blocks=st.lists(st.lists(lines(), max_size=12).map(b"".join), max_size=4),
       seconds=st.booleans())  # fmt: skip
def test_compiled_scans_as_the_regex_does(blocks: list[bytes], seconds: bool) -> None:
    assert bulk._compiled is not None
    assert scan_all(bulk._compiled(), blocks, seconds) == scan_all(bulk.Scanner(), blocks, seconds)
    for block in blocks:  # and a line counted is one json.loads reads, found if with findings
        scan = bulk.Scan._make(bulk.scanner().scan(block, seconds))
        others, found = {i for i, _ in scan.others}, dict(scan.found)
        for i, line in enumerate(block.split(b"\n")[:-1]):  # whole lines
            if i not in others:
                assert bool(json.loads(line)["findings"]) == (i in found)
                if i in found:  # the line, its edits (counted) left out
                    assert json.loads(found[i]) == {**json.loads(line), "edits": []}


LINE = (encode_record(RECORD) + "\n").encode()
ESCAPES = (b"\\x", b"\\u12G4", b"\\u12", b"\\/", b"\\", b"\\\\", b"\\u00e9\\uD800", b"\\U00e9",
           b"\xc3\xa9", b'\\"')  # fmt: skip


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"no line end",  # not a whole line: left out, as findall leaves it
        LINE + b'{"ts":"2026',
        LINE * 3,
        (encode_record({**RECORD, "status": None, "host": None, "after": None}) + "\n").encode(),
        (encode_record({**RECORD, "status": int("9" * 100)}) + "\n").encode(),
        (encode_record({**RECORD, "status": int("9" * 101)}) + "\n").encode(),
        LINE.replace(b'"status":200', b'"status":-0'),
        LINE.replace(b'"status":200', b'"status":0200'),
        LINE.replace(b'"status":200', b'"status":-'),
        *(LINE.replace(b'"before":"/A"', b'"before":"' + s + b'"') for s in ESCAPES),
        LINE.replace(b'"host":"a.test"', b'"host":"\\u0061"'),
        LINE.replace(b'"action":"rewritten"', b'"action":"a\\/"'),
        LINE.replace(b'"rule":"lowercase-host"', b'"rule":"\\n"'),
    ],
)
def test_edges(data: bytes) -> None:
    assert bulk._compiled is not None
    for seconds in (False, True):
        want = scan_all(bulk.Scanner(), [data], seconds)
        assert scan_all(bulk._compiled(), [data], seconds) == want


def test_records_with_findings_are_counted_and_handed_back() -> None:
    gone = ("reason", "rejected_by", "truncated", "status")
    kept = {k: v for k, v in RECORD.items() if k not in gone}
    record = {**kept, "findings": FINDINGS, "severity": "medium", "status": 404}  # in its place
    line = (encode_record(record) + "\n").encode()
    scan = bulk.Scan._make(bulk.scanner().scan(LINE + line, False))
    assert (scan.lines, scan.plain, scan.others) == (2, 2, [])
    edits = json.dumps(record["edits"], separators=(",", ":")).encode()
    assert scan.found == [(1, line[:-1].replace(edits, b"[]"))]


def test_plain_records_are_found() -> None:
    """The generated records are plain often enough for the comparison to mean something."""
    scan = bulk.Scan._make(bulk.scanner().scan(LINE * 2, False))
    assert (scan.lines, scan.plain, scan.others) == (2, 2, [])
    shape = b'[{"rule":"lowercase-host"},{"rule":"lowercase-host"}]'
    assert scan.firsts == [(0, 0, b'"rewritten"'), (0, 2, shape)]
