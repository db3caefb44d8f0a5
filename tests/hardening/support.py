"""What the hardening tests share: the figures printed at the end of the run, what a server
decoded made comparable, and the harness names they use (tests.harness: a private nginx, a
werkzeug WSGI server, ``urlsan proxy`` in reverse mode, a raw client).

Everything listens on 127.0.0.1 only, on a port the kernel picked; everything started is
stopped by the context manager that started it; the system's nginx service is never touched.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import unquote_to_bytes

from tests.harness import (
    LOOPBACK,
    NGINX_MISSING,
    WSGI_REQUESTS,
    KeepAlive,
    Nginx,
    Response,
    Werkzeug,
    addon_missing,
    nginx_binary,
    raw_request,
)
from tests.harness import ReverseProxy as Proxy

__all__ = [
    "FIGURES",
    "LOOPBACK",
    "NGINX_MISSING",
    "NOTES",
    "WSGI_REQUESTS",
    "KeepAlive",
    "Nginx",
    "Proxy",
    "Response",
    "Werkzeug",
    "addon_missing",
    "nginx_binary",
    "query_pairs",
    "raw_request",
    "resolve_dots",
]

# Figures printed at the end of the run by conftest.py's terminal summary.
FIGURES: Counter[str] = Counter()
NOTES: list[str] = []


# --- what a server decoded, made comparable


def query_pairs(raw: bytes) -> tuple[tuple[bytes, bytes], ...]:
    """A query as an application reads it: split on '&' and the first '=', then decode escapes."""
    if not raw:
        return ()
    out = []
    for part in raw.split(b"&"):
        name, eq, value = part.partition(b"=")
        out.append((unquote_to_bytes(name), unquote_to_bytes(value) if eq else b""))
    return tuple(out)


def resolve_dots(path: bytes) -> bytes:
    """RFC 3986 §5.2.4 on a decoded path (what a router or a file server does with '..')."""
    if not path.startswith(b"/"):
        return path
    out: list[bytes] = []
    segments = path.split(b"/")[1:]
    for i, seg in enumerate(segments):
        if seg == b"..":
            if out:
                out.pop()
        elif seg != b".":
            out.append(seg)
            continue
        if i == len(segments) - 1:
            out.append(b"")
    return b"/" + b"/".join(out)
