"""What a server makes of a target: the test suite's model of "meaning", independent of the core.

A server splits the target (RFC 3986 Appendix B; origin-form runs the path to "?"), splits the path
on raw "/" and the query on raw "&" and "=", percent-decodes each piece exactly once, and resolves
"." and ".." segments (RFC 3986 §5.2.4) on the decoded segments.  Two targets mean the same when
these views are equal.  Raw bytes stand for themselves: a lone surrogate from
``decode("utf-8", "surrogateescape")`` is the byte it escapes, other characters are their UTF-8.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import idna

_APPENDIX_B = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL
)
# auto form's authority-form: a host no scheme can start (IP-literal, or a leading digit) and a
# port, which is required ("1:" is a relative path; "a:1" reads as a scheme).
_AUTHORITY = re.compile(r"(?:\[[^/?#@\]]*\]|[0-9][^:/?#@\[\]]*):[0-9]+", re.DOTALL)
_ORIGIN = re.compile(r"([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_BASE_DEPTH = 100  # deeper than any relative path the tests generate climbs
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def raw_bytes(text: str) -> bytes:
    """A surrogate U+DC80-U+DCFF is the byte it escapes; any other lone surrogate is encoded
    as if it were a code point (what "surrogatepass" does), the core's choice too."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return b"".join(
            bytes([ord(c) - 0xDC00])
            if 0xDC80 <= ord(c) <= 0xDCFF
            else c.encode("utf-8", "surrogatepass")
            for c in text
        )


def decode(text: str) -> bytes:
    """Percent-decode once; a "%" that starts no escape is itself."""
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(text):
        out += raw_bytes(text[pos : m.start()])
        out.append(int(m.group(1), 16))
        pos = m.end()
    out += raw_bytes(text[pos:])
    return bytes(out)


def resolve(segments: list[bytes]) -> list[bytes]:
    """RFC 3986 §5.2.4 on decoded segments of an absolute path ("" before the first "/")."""
    out: list[bytes] = []
    last = len(segments) - 1
    for i, seg in enumerate(segments[1:], 1):
        if seg == b"..":
            if out:
                out.pop()
        elif seg != b".":
            out.append(seg)
            continue
        if i == last:
            out.append(b"")
    return [b"", *out]


def path_view(path: str, *, hierarchical: bool, relative: bool) -> tuple[bytes, ...]:
    if relative:
        # A relative path means what it resolves to: against a base deeper than the path climbs,
        # whose last segment is a document ("" means that document, "." its directory).
        base = "/" + "b/" * _BASE_DEPTH + "doc"
        path = base if path == "" else base.rpartition("/")[0] + "/" + path
    segments = [decode(s) for s in path.split("/")]
    if (hierarchical or relative) and path.startswith("/"):
        segments = resolve(segments)
    return tuple(segments)


def query_view(query: str | None) -> tuple[tuple[bytes, ...], ...] | None:
    if query is None:
        return None
    return tuple(tuple(decode(x) for x in pair.split("=", 1)) for pair in query.split("&"))


def host_view(host: str) -> bytes:
    """A host compares case-insensitively (§6.2.2.1); an IDN compares as its A-label (UTS 46)."""
    raw = not any(0xDC80 <= ord(c) <= 0xDCFF for c in host)  # a raw byte is no IDN
    # Nor is a host holding a delimiter no reg-name may hold raw (RFC 3986 §3.2.2): ":.é" (a
    # port that is no number) is kept as its bytes, percent-encoded, not read as labels.
    delimited = any(c in host for c in ":@[]")
    if not host.isascii() and "%" not in host and raw and not delimited:
        with contextlib.suppress(idna.IDNAError, UnicodeError, ValueError):
            host = ".".join(
                label if label.isascii() else idna.encode(label, uts46=True).decode("ascii")
                for label in host.split(".")
            )
    return decode(host).lower()


def server_view(target: str, form: str = "auto") -> dict[str, Any]:
    """The parts of ``target`` a server acts on, decoded once, in a comparable form."""
    if form == "origin" or (form == "auto" and target.startswith("/") and target[1:2] != "/"):
        m = _ORIGIN.fullmatch(target)
        assert m is not None
        path, query, frag = m.groups()
        if not path.startswith("/"):
            path = "/" + path  # RFC 9112 §3.2.1: origin-form always starts with "/"
        return {
            "path": path_view(path, hierarchical=True, relative=False),
            "query": query_view(query),
            "fragment": None if frag is None else decode(frag),
        }
    m = _APPENDIX_B.fullmatch(target)
    assert m is not None
    scheme, authority, path, query, frag = m.groups()
    if form == "authority" or (form == "auto" and scheme is None and _AUTHORITY.fullmatch(target)):
        # RFC 9112 §3.2.3: CONNECT's host ":" port ("[::1]:443", "10.0.0.1:80" in auto form).
        host, _, port = target.rpartition(":")
        return {"host": host_view(host), "port": port.lstrip("0") or port[:1]}
    scheme = scheme.lower() if scheme is not None else None
    view: dict[str, Any] = {"scheme": scheme}
    if authority is not None:
        userinfo, _, hostport = authority.rpartition("@")
        host, colon, port = hostport.rpartition(":")
        unclosed = hostport[:1] == "[" and "]" not in hostport  # all host: "[::1" has no port
        if not colon or (not port.isdigit() and port != "") or "]" in port or unclosed:
            host, port = hostport, ""
        view["userinfo"] = decode(userinfo)
        view["host"] = host_view(host)
        view["port"] = int(port) if port else DEFAULT_PORTS.get(scheme or "")
        if path == "":
            path = "/"  # RFC 3986 §6.2.3
    view["path"] = path_view(
        path,
        hierarchical=authority is not None or path.startswith("/"),
        relative=scheme is None and authority is None and not path.startswith("/"),
    )
    view["query"] = query_view(query)
    view["fragment"] = None if frag is None else decode(frag)
    return view
