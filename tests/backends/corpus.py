"""The request-targets every server of tests/backends is asked about, written by us.

Five parts, each a list of origin-form targets (bytes, as sent on the request line):

``sweep``
    every byte raw inside a path segment, and every escape ``%00``-``%FF`` (upper and lower
    case hex) alone, before a dot segment and inside one: what each server refuses, decodes,
    keeps.
``families``
    the evasion families: dot segments spelled every way (``.``, ``%2e``, ``%u002e``, ``..;``,
    ``.%00``…) combined with escaped and raw slashes and backslashes, path parameters, repeated
    slashes, above-root paths, ``?`` and ``#``, overlong and invalid UTF-8, ``%u`` escapes,
    and two- and three-segment paths built from these pieces.
``recorded``
    paths from the test data of others kept in tests/data: the inputs of urlcanon's
    ``path_dots.json`` (generated in a browser), the http(s) inputs of WPT's
    ``urltestdata.json``, cut to their path and query, and 2,000 real paths and queries
    (``real-paths.txt``, from URLs found on the web).
``mixed``
    3,000 draws (seeded: the same every run) of one to seven pieces: the segments above and
    the characters they are made of (``%``, ``%u``, ``;``, ``//``, ``#``, ``\t``…), run
    together without the separators a hand-written case would put between them.
``request_lines``
    targets that end in raw white space (``GET /a/b/..  HTTP/1.1``: space, tab, vertical tab,
    form feed, and runs of them) or hold a space: what each server parses out of the request
    line, and whether it then resolves the dot segment the separator left at the end.
``clean``
    targets no modeled server reads differently from its bytes (the common case).

Bytes that end the request line (CR, LF) are left out; a space is in the target only where
``request_lines`` puts it.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
_UNSENDABLE = frozenset(b"\r\n")


def sweep() -> list[bytes]:
    out: list[bytes] = []
    for b in range(256):
        if b in _UNSENDABLE or b == 0x20:  # space: request_lines
            continue
        out.append(b"/a" + bytes([b]) + b"b")
        out.append(b"/a/" + bytes([b]))
    for b in range(256):
        for hx in {f"{b:02X}", f"{b:02x}"}:
            esc = b"%" + hx.encode()
            out += [b"/a" + esc + b"b", b"/a/" + esc + b"/../c", b"/a/." + esc + b"/c"]
    return out


_SEGMENTS = [
    b"",
    b"a",
    b".",
    b"..",
    b"%2e",
    b"%2E%2e",
    b".%2e",
    b"%2e.",
    b"%u002e",
    b"%u002e%u002e",
    b"%U002E",
    b"..;",
    b"..;x",
    b".;",
    b";",
    b";x=1",
    b"a;b",
    b"a;b=c;d",
    b"..%00",
    b".%00",
    b"..%2f",
    b"..%2F..",
    b"%2f",
    b"a%2fb",
    b"%5c",
    b"..%5c",
    b"\\",
    b"..\\",
    b"%c0%ae%c0%ae",
    b"%e0%80%ae",
    b"%c3%a9",
    b"\xc3\xa9",
    b"\xe9",
    b"%e9",
    b"%ff%fe",
    b"%u2215",
    b"%u00e9",
    b"%uD800",
    b"%25",
    b"%252e",
    b"%",
    b"%zz",
    b"%2",
    b"~",
    b"a.b",
    b"...",
    b"%3b",
    b"%3f",
    b"%23",
]

_TAILS = [b"", b"/", b"?q=1", b"?a/../b", b"#f", b"#/../x", b"?x#y", b";p", b"/.", b"/.."]


def families() -> list[bytes]:
    out: list[bytes] = []
    for seg in _SEGMENTS:
        for tail in _TAILS:
            out.append(b"/" + seg + tail)
            out.append(b"/a/" + seg + b"/b" + tail)
            out.append(b"/a/b/" + seg + tail)
    for s1, s2 in itertools.product(_SEGMENTS, repeat=2):
        out.append(b"/" + s1 + b"/" + s2)
    for s1, s2, s3 in itertools.islice(itertools.product(_SEGMENTS[:20], repeat=3), 0, None, 7):
        out.append(b"/x/" + s1 + b"/" + s2 + b"/" + s3)
    out += [b"/" + b"/" * n + b"a" + b"/" * n + b"b" for n in range(4)] + [
        b"/a" + b"/.." * n + b"/b" for n in range(1, 5)
    ]
    out += [b"/x/..//y", b"/a/..%2f/b", b"/a/..;/b", b"/a/;/../b", b"/a/%u002e%u002e/b"]
    out += [b"/a/b/..", b"/a/b/../", b"/a/./b/.", b"/a;x/b;y/c;z", b"/a;/b;", b"/;/a"]
    # what makes Jetty decode a path: an escape, a parameter before "/", a segment starting "."
    for head in (b"/a.b", b"/.a", b"/a/.b", b"/a/b.", b"/a.", b"/a/..b", b"/a%41", b"/a;x/b"):
        for tail in (b";x;y", b";x;y/", b";x;y?%zz", b";x;y#z", b";x%3by", b";x;%2e", b";%?x"):
            out.append(head + tail)
    out += [b"/a;x%2?y", b"/a;%2f/b", b"/a;x/%2e%2e/b", b"/a;x%2f/../b"]
    # %u: a surrogate pair, lone halves, loose digits, next to raw and escaped UTF-8
    out += [
        b"/%ud83d%ude00",
        b"/%uDE00%uD83D",
        b"/%ud83d",
        b"/%ud83dx",
        b"/%u;;;;",
        b"/%u00",
        b"/%u2f",
    ]
    out += [b"/%u00e9%e9", b"/\xc3\xa9%u00e9%ff", b"/%uD800/%c3%a9"]
    return out


_HTTP = re.compile(r"^[hH][tT][tT][pP][sS]?:[/\\]*[^/\\?#]*([/\\][^#]*)?")


def recorded() -> list[bytes]:
    out: list[bytes] = []
    dots = json.loads((DATA / "urlcanon" / "path_dots.json").read_text())
    for table in dots.values():
        out += [k.encode("utf-8") for k in table]
    for case in json.loads((DATA / "urltestdata.json").read_text()):
        if not isinstance(case, dict):
            continue
        m = _HTTP.match(case["input"])
        if m and m.group(1):
            out.append(m.group(1).encode("utf-8"))
    # 2,000 real paths and queries, from URLs found on the web (tests/data/SOURCES.md).
    out += [p.encode("utf-8") for p in (DATA / "real-paths.txt").read_text("utf-8").splitlines()]
    return out


_PIECES = [
    b"%", b"%u", b";", b"/", b"//", b".", b"..", b"?", b"#", b"\\", b"a", b"%2", b"%e9",
    b"\xc3\xa9", b"\xe9", b"%uD8", b"+", b"%25", b"%2f", b"%2e", b"=", b"~", b"%3b", b"%00",
    b"%5c", b"\t",
]  # fmt: skip


def mixed(draws: int = 3000, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    pieces = _PIECES + _SEGMENTS
    return [
        b"/" + b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 7))) for _ in range(draws)
    ]


# White space a request line may hold after the target: the servers differ on which bytes
# separate its words and on how many of them they take.
_LINE_TAILS = [b" ", b"  ", b"\t", b" \t", b"\t ", b"\x0b", b"\x0b ", b"\x0c", b"\x0c ", b"\xa0 "]


def request_lines() -> list[bytes]:
    out: list[bytes] = []
    for seg in _SEGMENTS:
        for tail in _LINE_TAILS:
            out.append(b"/a/b/" + seg + tail)
    for head in (b"/a/b", b"/a/b/", b"/a/.", b"/..", b"/a/..%2f/b", b"/a/b?q", b"/a/b#f"):
        out += [head + tail for tail in _LINE_TAILS]
    out += [b"/a b", b"/a b/..", b"/a/ /..", b"/a/b/.. x", b"/a/b/..\t x", b"/ ", b"/a/%20/.. "]
    return out


def clean() -> list[bytes]:
    return [
        b"/",
        b"/index.html",
        b"/a/b/c",
        b"/api/v1/users/42?x=1&y=2",
        b"/static/app.min.js?v=3",
        b"/search?q=a%20b&page=2",
        b"/a-b_c~d.e/f!g$h&i'j(k)l*m,o=p:q@r",
        b"/path/to/file.tar.gz",
        b"/..a/b..",
        b"/.well-known/acme-challenge/x",
    ]


def corpus() -> list[bytes]:
    """Every target, each once, in a fixed order; sendable (no CR, LF; origin-form)."""
    seen: dict[bytes, None] = {}
    parts = sweep() + families() + recorded() + mixed()
    for t in [t for t in parts if b" " not in t] + request_lines() + clean():
        if t.startswith(b"/") and not _UNSENDABLE.intersection(t) and len(t) <= 2000:
            seen.setdefault(t, None)
    return list(seen)
