"""The plain records of an audit log, read by the block instead of by the line.

Most records of a log are alike: written by `urlsan.audit.record.encode_record`, no servers
reading the target otherwise, ASCII, most without findings.  One regular expression (`_LINE`)
matches such a record whole, in the exact shape the writer gives it, and captures the few fields
`urlsan report` counts; ``findall`` runs it over a block of thousands of lines in one call, and
`Scanner` counts the columns it returns (`Block`).  A matched record with findings is counted so
too, and handed back (`Scan.found`) for ``json.loads`` to read its findings.  A line it does not
match (servers reading the target otherwise, another writer's key order, an escape in a field the
report counts, a malformed line) is left to ``json.loads`` whole, as before: both ways count a
line the same (tests/audit/test_report_bulk.py).

Why every line `_LINE` matches is one that ``json.loads`` reads to the same values: the shape is
JSON's own grammar narrowed (no white space, fixed keys in a fixed order, so no key twice);
the strings captured hold no ``"``, ``\\``, control or non-ASCII byte, so their bytes are their
text; the strings not captured (the targets, the method, an edit's text: the report does not
show them) may also hold JSON's escapes (RFC 8259 §7: ``\\"``, ``\\\\``, ``\\/``, ``\\b``,
``\\f``, ``\\n``, ``\\r``, ``\\t``, ``\\u`` and four hex digits, which ``json.loads`` reads,
a lone surrogate too), the way the writer escapes a quote or a non-ASCII character
(``ensure_ascii``); integers are JSON's (``-0`` too) and short enough for Python's ``int`` (at
most 100 digits).

The compiled scanner (audit/_bulk.c) does the same match and counting in C where it is built
(`scanner`); `Scanner` is the way without it, and tests/audit/test_bulk_scanner.py holds the two
to the same results.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from itertools import compress
from typing import Any, NamedTuple, Protocol

_CHAR = rb'[^"\\\x00-\x1f\x80-\xff]'  # a string's byte that needs no escape, ASCII
_STR = rb'"' + _CHAR + rb'*+"'
# A string not captured: escapes too (RFC 8259 §7), any json.loads reads.
_ANY = rb'"' + _CHAR + rb'*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})' + _CHAR + rb'*+)*+"'
_INT = rb"-?+(?:0|[1-9][0-9]{0,99})"  # int() refuses more than 4,300 digits
_EDIT = (
    rb'\{"rule":' + _STR + rb',"component":' + _ANY + rb',"start":' + _INT + rb',"end":' + _INT
    + rb',"before":' + _ANY + rb',"after":' + _ANY + rb"\}"
)  # fmt: skip
# A finding as `encode_record` writes it (`record._findings`): ``offsets`` with more than one
# occurrence.  The report reads a record with findings with json.loads too (its findings are
# counted in Python); matching it here lets the rest of it be counted with the plain records.
_FINDING = (
    rb'\{"rule":' + _ANY + rb',"component":' + _ANY + rb',"offset":' + _INT + rb',"detail":' + _ANY
    + rb',"occurrences":' + _INT + rb'(?:,"offsets":\[' + _INT + rb"(?:," + _INT + rb")*+\])?+"
    + rb',"severity":' + _ANY + rb"\}"
)  # fmt: skip
# The findings of a record: none, or some and then the record's severity and its target's.
_FINDINGS = (
    rb'(\[\]|\[' + _FINDING + rb"(?:," + _FINDING + rb")*+\]"
    rb'(?:,"severity":' + _ANY + rb')?+(?:,"target_severity":' + _ANY + rb',"severity_reason":'
    + _ANY + rb")?+)"
)  # fmt: skip
# The record `encode_record` writes (and the one `encode_json` writes for a rejected target:
# reason, rejected_by, truncated).  The captures: the time (`record.rfc3339`), to the minute and
# its seconds; the client's address (``ip`` of ``ip:port``, as `summary._client_address` reads
# it; another form is left to json.loads); scheme and host, the action, as JSON (never empty,
# so that a line not matched is told by its empty groups); the edits; the findings (b"[]" for
# none: a plain record); the status.
_RECORD = (
    rb'\{"ts":"(([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}):([0-5][0-9])\.[0-9]{3})Z"'
    rb',"client":"([^"\\\x00-\x1f\x80-\xff:\[]++)(?::[^"\\\x00-\x1f\x80-\xff:]*+)?+"'
    rb',"method":' + _ANY + rb',"scheme":(' + _STR + rb',"host":(?:null|' + _STR + rb"))"
    rb',"http_version":' + _ANY + rb'(?:,"profile":' + _ANY + rb")?+"
    rb',"before":' + _ANY + rb',"after":(?:null|' + _ANY + rb'),"action":(' + _STR + rb")"
    rb',"edits":(\[(?:' + _EDIT + rb"(?:," + _EDIT + rb")*+)?+\])"
    rb'(?:,"edits_truncated":' + _INT + rb')?+,"findings":' + _FINDINGS +
    rb'(?:,"reason":' + _ANY + rb')?+(?:,"rejected_by":' + _ANY + rb')?+(?:,"truncated":true)?+'
    rb',"status":(null|' + _INT + rb")\}"
)  # fmt: skip
# One line of a block: a plain record, or any other line (the last group).
_LINE = re.compile(rb"(?:" + _RECORD + rb"|([^\n]*+))\n")
# What an edit holds besides its rule: the edits of plain records without it are few shapes.
_EDIT_TAIL = re.compile(
    rb',"component":' + _ANY + rb',"start":[^,]*,"end":[^,]*'
    rb',"before":' + _ANY + rb',"after":' + _ANY
)  # fmt: skip
_RULE = re.compile(rb'"rule":"([^"]*)"')


class Block(NamedTuple):
    """A block of lines as columns, one item per line; a line `_LINE` does not match as a
    record has ``b""`` in every column but `other`, which holds it (without its line end)."""

    time: Sequence[bytes]  # b"2026-11-22T04:00:07.250" (its "Z" left out)
    minute: Sequence[bytes]  # b"2026-11-22T04:00"
    second: Sequence[bytes]  # b"07"
    client: Sequence[bytes]  # the address, without a port
    origin: Sequence[bytes]  # b'"https","host":"a.test"' (the host may be null)
    action: Sequence[bytes]  # quoted
    edits: Sequence[bytes]  # the edits' rules only: b'[{"rule":"lowercase-host"}]'
    findings: Sequence[bytes]  # b"[]", or the findings and the severities after them
    status: Sequence[bytes]  # b"200", b"null"
    other: Sequence[bytes]
    raw_edits: Sequence[bytes]  # the edits as the line has them: b'[{"rule":...}]'

    @property
    def others(self) -> list[int]:
        """The indexes of the lines that are no plain record, in order."""
        found: list[int] = []
        minute, at = self.minute, -1
        for _ in range(minute.count(b"")):
            at = minute.index(b"", at + 1)
            found.append(at)
        return found


def split(lines: bytes | memoryview) -> Block:
    """``lines`` (whole lines, each with its ``\\n``) as a `Block`."""
    rows = _LINE.findall(lines)
    columns: list[Sequence[bytes]] = list(zip(*rows, strict=True)) if rows else [()] * 10
    edits = columns[6]
    if edits:
        columns[6] = _EDIT_TAIL.sub(b"", b"\n".join(edits)).split(b"\n")
    return Block._make([*columns, edits])


class Scan(NamedTuple):
    """What `Scanner.scan` tells of a block of lines."""

    lines: int
    plain: int  # the plain records among them
    nulls: int  # of those, the ones whose status is null
    others: list[tuple[int, bytes]]  # (index, line without its line end) of the other lines
    # (index, 0, action) and (index, 2, edits): an action or edits shape (`Block.edits`) not
    # seen before in the log, where it first comes; by index, the action first at the same.
    firsts: list[tuple[int, int, bytes]]
    # Plain records by (minute, second, action), or by (minute, action) when not ``seconds``.
    times: dict[tuple[bytes, ...], int]
    minutes: dict[bytes, tuple[bytes, bytes]]  # minute: its earliest and latest `Block.time`
    # (index, line without its line end nor its edits: "edits":[]) of the records counted with
    # the plain ones whose findings are left to json.loads
    found: list[tuple[int, bytes]]


class Totals(NamedTuple):
    """The plain records counted by `Scanner.take`: keys as `Block` captures them."""

    actions: dict[bytes, int]
    hosts: dict[tuple[bytes, bytes], int]  # (origin, action)
    clients: dict[tuple[bytes, bytes], int]  # (client, action)
    edits: dict[bytes, int]


class Scanning(Protocol):
    """A log's plain records being counted: the compiled scanner (audit/_bulk.c), or
    `Scanner` where it is not built."""

    def scan(self, lines: bytes | memoryview, seconds: bool, /) -> tuple[Any, ...]: ...

    def take(self) -> tuple[Any, ...]: ...


class Scanner:
    """The plain records of one log, counted block by block: `split` and Counters (the
    compiled scanner, audit/_bulk.c, returns the same for each call, in C)."""

    def __init__(self) -> None:
        self._counts: tuple[Counter[Any], ...] = (Counter(), Counter(), Counter(), Counter())

    def scan(self, lines: bytes | memoryview, seconds: bool, /) -> tuple[Any, ...]:
        """``lines`` (whole lines, each with its ``\\n``) as a `Scan`; their plain records
        counted for `take`.  ``seconds``: `Scan.times` by the second too."""
        block = split(lines)
        actions, hosts, clients, edits = self._counts
        others = [(i, block.other[i]) for i in block.others]
        firsts = [(block.action.index(a), 0, a) for a in set(block.action) - actions.keys() if a]
        firsts += [(block.edits.index(e), 2, e) for e in set(block.edits) - edits.keys() if e]
        firsts.sort()
        # Column by column, each a loop in C (the other lines' items are b"": left out).
        keep = list(map(bool, block.minute))
        action = block.action
        actions.update(filter(None, action))
        edits.update(filter(None, block.edits))
        hosts.update(compress(zip(block.origin, action, strict=True), keep))
        clients.update(compress(zip(block.client, action, strict=True), keep))
        when = (block.minute, block.second, action) if seconds else (block.minute, action)
        times = Counter(compress(zip(*when, strict=True), keep))
        stamps = sorted(compress(zip(block.minute, block.time, strict=True), keep))
        latest = dict(stamps)  # the last of each minute's times, in order, is its latest
        minutes = {m: (t, latest[m]) for m, t in reversed(stamps)}
        plain = len(stamps)
        nulls = block.status.count(b"null")
        found: list[tuple[int, bytes]] = []
        if set(block.findings) - {b"", b"[]"}:  # b"": not matched; b"[]": a plain record
            rows = bytes(lines).split(b"\n")
            for i, f in enumerate(block.findings):
                if f not in (b"", b"[]"):  # its edits, counted here, left out (as _bulk.c does)
                    raw = b',"edits":' + block.raw_edits[i] + b","
                    found.append((i, rows[i].replace(raw, b',"edits":[],', 1)))
        return Scan(len(block.minute), plain, nulls, others, firsts, dict(times), minutes, found)

    def take(self) -> tuple[Any, ...]:
        """The plain records counted since the last call, as a `Totals`; counts start again at
        0, the actions and edits shapes seen stay seen."""
        totals = Totals(*({k: n for k, n in c.items() if n} for c in self._counts))
        for counter in self._counts:
            for key in counter:
                counter[key] = 0
        return totals


def scanner() -> Scanning:
    """The compiled scanner where it is built (and ``URLSAN_NO_EXTENSIONS`` is not set), else
    `Scanner`."""
    return (_compiled or Scanner)()


_compiled: type[Scanning] | None = None
if not os.environ.get("URLSAN_NO_EXTENSIONS"):
    # No compiler at install time: no module, and the regular expression does it.
    with contextlib.suppress(ImportError):
        from ._bulk import Scanner as _compiled


def origin(captured: bytes) -> tuple[str, str | None]:
    """The scheme and the host (None for null) of a `Block.origin` item."""
    scheme, _, host = captured.partition(b',"host":')
    return text(scheme), None if host == b"null" else text(host)


def text(quoted: bytes) -> str:
    """A captured JSON string's text (plain ASCII without escapes: its bytes)."""
    return quoted[1:-1].decode("ascii")


def rules(edits: bytes) -> list[str]:
    """The rules of a `Block.edits` item, in order."""
    return [r.decode("ascii") for r in _RULE.findall(edits)]
