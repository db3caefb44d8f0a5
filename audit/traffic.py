"""The values recorded traffic becomes: a `Request` (what the proxy's decision reads, whether
mitmproxy saw it live or a reader found it in a recording), an `Unreadable` for what a reader
could not read, and `split_url`, which turns the absolute URL a recording holds into what was
sent on the wire.

The readers (`sources`, `archive`) yield these and the decision (`urlsan.addon.decision`) takes
them; this module imports neither, so none of them imports another in a circle.
"""

from __future__ import annotations

from typing import NamedTuple

from ..core.compiled import fields_as_slots

__all__ = ["CUT_LINE", "Item", "Request", "Unreadable", "split_url"]


@fields_as_slots  # read on every request, by the proxy and `urlsan audit`
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

    where: str  # "FILE:LINE", "FILE: entry N", "FILE: byte N": where the reader stopped
    why: str


Item = Request | Unreadable

# Why a reader did not read the last line of a file that does not end with a line end.  A last
# line that holds every field urlsan reads is read all the same: a line end is all it lacks.
CUT_LINE = "cut short: the file ends inside this line"


def split_url(url: str) -> tuple[str, str | None, str]:
    """``scheme://authority/rest`` → (scheme, authority, origin-form target).

    A recording that keeps the absolute URL (HAR, WARC-Target-URI, CDX) holds what an HTTP/1.1
    client sent as an origin-form request-target (RFC 9112 §3.2.1) plus the Host header; a URL
    that is not absolute comes back as the target, with no scheme or authority.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.isascii() or not scheme.isalpha():
        return "", None, url  # not absolute: the target as it is
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, target = rest[:cut], rest[cut:]
    if not target.startswith("/"):
        target = "/" + target  # RFC 9112 §3.2.1: an empty path is sent as "/"
    return scheme.lower(), authority or None, target
