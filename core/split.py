"""Split a target into components before anything is decoded (RFC 3986 §2.4, Appendix B).

Recognizes the request-target forms of RFC 9112 §3.2 as well as relative references:

    origin-form    = absolute-path [ "?" query ]          GET /a?b
    absolute-form  = absolute-URI                          GET http://h/a?b
    authority-form = uri-host ":" port                     CONNECT h:443
    asterisk-form  = "*"                                   OPTIONS *
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Form = Literal["auto", "origin", "absolute", "authority", "asterisk", "reference"]
FORMS: tuple[str, ...] = ("auto", "origin", "absolute", "authority", "asterisk", "reference")

# RFC 3986 Appendix B, with the scheme held to §3.1's grammar so that "1a:b" or "[::1]:80" is not
# taken for a scheme.  Every group is optional, so the pattern matches any string.
_URI_REFERENCE = re.compile(
    r"""
    (?:(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):)?
    (?://(?P<authority>[^/?\#]*))?
    (?P<path>[^?\#]*)
    (?:\?(?P<query>[^\#]*))?
    (?:\#(?P<fragment>.*))?
    """,
    re.VERBOSE | re.DOTALL,
)
_ORIGIN_FORM = re.compile(r"(?P<path>[^?\#]*)(?:\?(?P<query>[^\#]*))?(?:\#(?P<fragment>.*))?", re.DOTALL)
# authority-form: a host (IP-literal or a name without delimiters) and a port of digits only.
_AUTHORITY_FORM = re.compile(r"(?:\[[^/?#@\]]*\]|[^:/?#@\[\]]+):[0-9]*", re.DOTALL)


@dataclass(slots=True)
class Span:
    """A component's text and its offset in the input (``None`` text: the component is absent)."""

    text: str | None
    start: int


@dataclass(slots=True)
class Parts:
    form: str
    scheme: Span
    userinfo: Span
    host: Span
    port: Span
    path: Span
    query: Span
    fragment: Span

    @property
    def has_authority(self) -> bool:
        return self.host.text is not None


def _span(m: re.Match[str], name: str) -> Span:
    return Span(m.group(name), max(m.start(name), 0))


def detect_form(target: str) -> str:
    """The request-target form of ``target`` when the caller did not say."""
    if target == "*":
        return "asterisk"
    if target.startswith("/") and not target.startswith("//"):
        return "origin"
    m = _URI_REFERENCE.match(target)
    assert m is not None
    if m.group("scheme") is None and _AUTHORITY_FORM.fullmatch(target):
        # "127.0.0.1:8080", "[::1]:443": no scheme can start so, only an authority can.
        return "authority"
    return "absolute" if m.group("scheme") is not None else "reference"


def split_authority(authority: str, start: int) -> tuple[Span, Span, Span]:
    """Split ``[ userinfo "@" ] host [ ":" port ]`` (RFC 3986 §3.2).

    Userinfo ends at the last "@" (what curl and browsers do); a port is the digits after the
    last ":" that is not inside an IP-literal.
    """
    at = authority.rfind("@")
    if at >= 0:
        userinfo = Span(authority[:at], start)
        hostport, hp_start = authority[at + 1 :], start + at + 1
    else:
        userinfo = Span(None, start)
        hostport, hp_start = authority, start
    colon = hostport.rfind(":")
    port = hostport[colon + 1 :]
    # §3.2.3 port = *DIGIT: anything else after the colon is not a port, and stays in the host,
    # where the colon gets encoded.
    if colon >= 0 and "]" not in port and (port == "" or (port.isascii() and port.isdigit())):
        host = Span(hostport[:colon], hp_start)
        port = Span(hostport[colon + 1 :], hp_start + colon + 1)
    else:
        host, port = Span(hostport, hp_start), Span(None, hp_start + len(hostport))
    return userinfo, host, port


def split(target: str, form: str = "auto") -> Parts:
    """Split ``target`` into its components, keeping each one's offset in ``target``."""
    if form == "auto":
        form = detect_form(target)
    none = Span(None, 0)
    if form == "asterisk":
        return Parts(form, none, none, none, none, Span(target, 0), none, none)
    if form == "authority":
        userinfo, host, port = split_authority(target, 0)
        end = len(target)
        return Parts(form, none, userinfo, host, port, Span("", end), none, none)
    if form == "origin":
        # RFC 9112 §3.2.1: the path runs to "?" (a "//" here is path, not authority).
        m = _ORIGIN_FORM.match(target)
        assert m is not None
        return Parts(form, none, none, none, none, _span(m, "path"), _span(m, "query"),
                     _span(m, "fragment"))

    m = _URI_REFERENCE.match(target)
    assert m is not None  # every group is optional

    if m.group("authority") is not None:
        userinfo, host, port = split_authority(m.group("authority"), m.start("authority"))
    else:
        userinfo = host = port = none
    kind = "absolute" if m.group("scheme") is not None else "reference"
    return Parts(kind, _span(m, "scheme"), userinfo, host, port, _span(m, "path"),
                 _span(m, "query"), _span(m, "fragment"))
