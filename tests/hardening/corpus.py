"""The tricky request-targets of the hardening tests, as the raw bytes a client puts on the wire.

Every byte 0x00-0xFF raw and escaped in path, query and fragment position; the traversal,
double-encoding and smuggling classics of docs/security.md; and the paths of the shared data
set (../shared/data, see its SOURCES.md) reduced to origin-form.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

DATA = Path(os.environ.get("URLSAN_SHARED_DATA", Path(__file__).parents[3] / "shared" / "data"))

# Where each byte goes: path, query value, fragment.
POSITIONS: tuple[tuple[str, bytes, bytes], ...] = (
    ("path", b"/a", b"b/c"),
    ("query", b"/p?k=a", b"b&z=1"),
    ("fragment", b"/p?q#a", b"b"),
)

TRICKS: tuple[bytes, ...] = (
    # dot segments, raw and encoded, above the root, with parameters
    b"/a/../b",
    b"/a/./b",
    b"/../b",
    b"/../../etc/passwd",
    b"/a/b/../../../c",
    b"/a/..",
    b"/a/.",
    b"/a/%2e%2e/b",
    b"/a/%2E%2E/b",
    b"/a/.%2e/b",
    b"/a/%2e./b",
    b"/%2e%2e/%2e%2e/etc/passwd",
    b"/a/%2e/b",
    b"/a/..;/b",
    b"/a/..;x=1/b",
    b"/a/.;/b",
    b"/..;/WEB-INF/web.xml",
    b"/a/%2e%2e;/b",
    b"/a/...",
    b"/a/.../b",
    b"/a/..%00/b",
    b"/a/..%2500/b",
    # double and triple encoding
    b"/a/%252e%252e/b",
    b"/a/%25252e/b",
    b"/%252F",
    b"/a%2525b",
    b"/a?x=%2526",
    b"/a?x=%252e",
    b"/%25%32%35",
    b"/%25%32%65%25%32%65/",
    b"/%%32%65",
    b"/%2%65",
    b"/%%",
    b"/%",
    b"/a%",
    b"/a%2",
    b"/a%g0",
    b"/?%",
    b"/?a=%",
    b"/#%",
    # escaped slashes and backslashes
    b"/a%2Fb",
    b"/a%2fb",
    b"/a%2F..%2Fb",
    b"/a/b%2F..%2F..%2Fc",
    b"/a%5Cb",
    b"/a%5c..%5cb",
    b"/a\\b",
    b"/a\\..\\b",
    b"/..\\..\\etc",
    b"/a/%5C../b",
    # NUL, CR, LF, controls, escaped
    b"/a%00",
    b"/a%00.jpg",
    b"/a%0d%0aSet-Cookie:%20x=1",
    b"/a%0D%0A",
    b"/?x=%0d%0a",
    b"/#%0a",
    b"/a%09b",
    b"/a%7fb",
    b"/a%1bb",
    # overlong UTF-8 and %u
    b"/%c0%ae%c0%ae/etc",
    b"/%c0%af",
    b"/%e0%80%ae",
    b"/%f0%80%80%ae",
    b"/%c1%9c",
    b"/%u002e%u002e/a",
    b"/%u2215",
    b"/a?x=%u0041",
    b"/%U002E",
    # fullwidth and other look-alikes, raw and escaped
    "/ａｂｃ/．．/ｄ".encode(),
    b"/%EF%BC%8E%EF%BC%8E/a",
    "/a／b".encode(),
    b"/%E2%88%95",
    "/﹒﹒/a".encode(),
    "/a?q=ｘ".encode(),
    "/é".encode(),
    "/é".encode("latin-1"),
    "/ü?ü#ü".encode(),
    b"/\xed\xa0\x80",
    b"/\xf4\x90\x80\x80",
    b"/\xc0\xae",
    # fragment smuggling: a '#' that a second decoder would read
    b"/a%23b",
    b"/a%23/../b",
    b"/a?x=%23y",
    b"/a#b/../c",
    b"/a#b?c",
    b"/a#/../../x",
    b"/a?b#c#d",
    b"/a%3Fb",
    b"/a%3fb?c",
    b"/a?b%3Fc",
    # query shapes
    b"/a?",
    b"/a??",
    b"/a?&",
    b"/a?a=1&a=2",
    b"/a?a=b=c",
    b"/a?a+b=c+d",
    b"/a?%41=%42",
    b"/a?%7e=%7E",
    b"/a?utm_source=x&id=1",
    b"/a?;x",
    b"/a?x=[]",
    b"/a?x={}",
    b"/a?x=|",
    # unreserved escapes, case of escapes
    b"/%7euser",
    b"/%7Euser",
    b"/%41%42%43",
    b"/%61",
    b"/%2d%2e%5f%7e",
    b"/%3a%40",
    b"/%3A",
    b"/%2c%3b%3d",
    b"/%20",
    b"/a%2bb",
    # slashes
    b"//",
    b"//a",
    b"//a//b",
    b"///a",
    b"/a//../b",
    b"/a/b//",
    b"/.//a",
    b"/./",
    b"/.",
    b"/..",
    b"/a/..//b",
    # delimiters raw
    b"/a:b",
    b"/a@b",
    b"/a!$&'()*+,;=b",
    b"/a[b]",
    b"/a{b}",
    b"/a|b",
    b"/a^b",
    b"/a`b",
    b"/a<b>",
    b'/a"b',
    b"/a b",
    b"/a?x=a b",
    b"/[::1]",
    b'/a?x="',
)


def byte_sweep() -> Iterator[tuple[str, bytes]]:
    """Every byte, raw and escaped (both hex cases), in every position."""
    for where, before, after in POSITIONS:
        for b in range(256):
            yield f"raw-{where}", before + bytes([b]) + after
            esc = f"%{b:02X}".encode()
            yield f"escaped-{where}", before + esc + after
            if esc.lower() != esc:
                yield f"escaped-lower-{where}", before + esc.lower() + after


_ABSOLUTE = re.compile(rb"^[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\\]*(.*)$", re.DOTALL)


def origin_part(url: bytes) -> bytes | None:
    """The origin-form a client would send for ``url`` (its path, query and fragment)."""
    m = _ABSOLUTE.match(url.strip(b" \t\r\n"))
    if m is None:
        return url if url.startswith(b"/") else None
    rest = m.group(1)
    if not rest.startswith(b"/"):
        rest = b"/" + rest
    return rest


@cache
def shared_targets() -> tuple[tuple[str, bytes], ...]:
    """Origin-form targets from ../shared/data; empty when the data set is not there."""
    out: list[tuple[str, bytes]] = []
    if not DATA.is_dir():
        return ()

    def latin1_json(name: str) -> object:
        # urlcanon's files are bytes in latin-1 clothing (see SOURCES.md).
        return json.loads((DATA / "urlcanon" / name).read_bytes().decode("latin-1"))

    with_latin1 = lambda s: s.encode("latin-1")  # noqa: E731
    dots = latin1_json("path_dots.json")
    assert isinstance(dots, dict)
    for section in dots.values():
        for path in section:
            raw = with_latin1(path)
            out.append(("urlcanon/path_dots", raw if raw.startswith(b"/") else b"/" + raw))
    for name in ("parsing.json", "semantic_precise.json", "supplemental_whatwg.json"):
        table = latin1_json(name)
        assert isinstance(table, dict)
        for url in table:
            part = origin_part(with_latin1(url))
            if part is not None:
                out.append((f"urlcanon/{name}", part))
    idem = latin1_json("idempotence.json")
    assert isinstance(idem, list)
    for url in idem:
        part = origin_part(with_latin1(url))
        if part is not None:
            out.append(("urlcanon/idempotence.json", part))
    wpt = json.loads((DATA / "urltestdata.json").read_text())
    for case in wpt:
        if (isinstance(case, dict) and case.get("base") in (None, "about:blank")) or (
            isinstance(case, dict) and str(case.get("input", "")).startswith("http")
        ):
            part = origin_part(case["input"].encode("utf-8", "surrogatepass"))
            if part is not None:
                out.append(("urltestdata.json", part))
    sb = json.loads((DATA / "safebrowsing-canonicalization.json").read_text())
    for case in sb["cases"] + sb.get("supplemental", []):
        part = origin_part(case["input"].encode())
        if part is not None:
            out.append(("safebrowsing-canonicalization.json", part))
    rfc = json.loads((DATA / "rfc3986-examples.json").read_text())
    for ref, _ in rfc["resolution"]["normal"] + rfc["resolution"]["abnormal"]:
        out.append(("rfc3986-examples.json", b"/b/c/" + ref.encode()))
    return tuple(out)


def corpus(shared: bool = True) -> dict[bytes, str]:
    """Every target once, with the name of the first family it came from."""
    targets: dict[bytes, str] = {}
    for family, target in byte_sweep():
        targets.setdefault(target, family)
    for target in TRICKS:
        targets.setdefault(target, "tricks")
    if shared:
        for family, target in shared_targets():
            targets.setdefault(target, family)
    return targets
