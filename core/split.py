"""Split a target into components before anything is decoded (RFC 3986 §2.4, Appendix B).

Recognizes the request-target forms of RFC 9112 §3.2 as well as relative references:

    origin-form    = absolute-path [ "?" query ]          GET /a?b
    absolute-form  = absolute-URI                          GET http://h/a?b
    authority-form = uri-host ":" port                     CONNECT h:443
    asterisk-form  = "*"                                   OPTIONS *
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .charsets import SCHEME

FORMS: tuple[str, ...] = ("auto", "origin", "absolute", "authority", "asterisk", "reference")

# RFC 3986 Appendix B, with the scheme held to §3.1's grammar so that "1a:b" or "[::1]:80" is not
# taken for a scheme.  Every group is optional, so the pattern matches any string.  The common
# authority, "host[:port]" with no "@", "[", "]" or other ":" in the host, is split here as
# `split_authority` splits it (a port of digits); any other is the ``authority`` group, which
# `split_authority` splits.  Every run is possessive: none can hold the character that ends it,
# so giving characters back never helps, and the regex engine keeps no place to go back to.
# An optional part is "(?:x|)", not "(?:x)?": the same match, but the regex engine takes a
# branch in one step where a repeat sets up a loop (a third of this match's cost).
_URI_REFERENCE = re.compile(
    rf"""
    (?:(?P<scheme>{SCHEME}):|)
    (?://(?:
        (?P<host>[^/?\#@\[\]:]*+)(?::(?P<port>[0-9]*+)|)(?![^/?\#])
        |(?P<authority>[^/?\#]*+)
    )|)
    (?P<path>[^?\#]*+)
    (?:\?(?P<query>[^\#]*+)|)
    (?:\#(?P<fragment>.*+)|)
    """,
    re.VERBOSE | re.DOTALL,
)
_ORIGIN_FORM = re.compile(
    r"(?P<path>[^?\#]*+)(?:\?(?P<query>[^\#]*+)|)(?:\#(?P<fragment>.*+)|)", re.DOTALL
)
# authority-form, told apart by shape in "auto": a host that no scheme can start (an IP-literal,
# or a name starting with a digit: "127.0.0.1:8080") and a port of digits.  A name starting with
# a letter reads as a scheme ("example.com:443"), and so does one that canonicalizes into a
# letter ("%41b:1" → "ab:1", "Àb:1" → "xn--b-rfa:1"), so "auto" never takes them for hosts: the
# output must read as the input did.  A port is required: "1:" is a relative path.
_AUTHORITY_FORM = re.compile(r"(?:\[[^/?#@\]]*\]|[0-9][^:/?#@\[\]]*):[0-9]+", re.DOTALL)


# A component: its text (None when absent) and its offset in the input.
Span = tuple[str | None, int]
_ABSENT: Span = (None, 0)
_NO_AUTHORITY = _ABSENT * 4  # no scheme, userinfo, host or port, as `spans` returns them


# A split target as `spans` returns it, flat: its form, then the text and offset of scheme,
# userinfo, host, port, path, query and fragment.
_Text = str | None
Split = tuple[
    str, _Text, int, _Text, int, _Text, int, _Text, int, _Text, int, _Text, int, _Text, int
]


class Parts(NamedTuple):
    """`Split` with each field named."""

    form: str
    scheme: Span
    userinfo: Span
    host: Span
    port: Span
    path: Span
    query: Span
    fragment: Span


_new = tuple.__new__  # Parts' own __new__ is Python code: this builds the same value faster


def split_authority(authority: str, start: int) -> tuple[Span, Span, Span]:
    """Split ``[ userinfo "@" ] host [ ":" port ]`` (RFC 3986 §3.2).

    Userinfo ends at the last "@" (what curl and browsers do); a port is the digits after the
    last ":" that is not inside an IP-literal.
    """
    at = authority.rfind("@")
    if at >= 0:
        userinfo: Span = (authority[:at], start)
        hostport, hp_start = authority[at + 1 :], start + at + 1
    else:
        userinfo, hostport, hp_start = (None, start), authority, start
    if hostport[:1] == "[" and "]" not in hostport:
        # An IP-literal that is never closed: all of it is the host, whose character rules
        # escape it.  Taking "1" of "[::1" for a port would move the split (issue #14).
        return userinfo, (hostport, hp_start), (None, hp_start + len(hostport))
    colon = hostport.rfind(":")
    port = hostport[colon + 1 :]
    # §3.2.3 port = *DIGIT: anything else after the colon is not a port, and stays in the host,
    # where the colon gets encoded.
    if colon >= 0 and "]" not in port and (port == "" or (port.isascii() and port.isdigit())):
        return userinfo, (hostport[:colon], hp_start), (port, hp_start + colon + 1)
    return userinfo, (hostport, hp_start), (None, hp_start + len(hostport))


def split(target: str, form: str = "auto") -> Parts:
    """Split ``target`` into its components, keeping each one's offset in ``target``.

    ``auto`` tells the request-target forms apart by shape (`spans`)."""
    f, *flat = spans(target, form)
    return _new(Parts, (f, *zip(flat[::2], flat[1::2], strict=True)))


def spans(target: str, form: str = "auto") -> Split:
    """`split` as one flat tuple: the driver unpacks it at once, which a named tuple's field
    names would only slow down (each is a descriptor, read by a slow attribute lookup), and so
    would a tuple for each component.

    ``auto`` tells the request-target forms apart by shape: "*" is asterisk-form, "/x" (but not
    "//x") origin-form, "host:port" with a host that cannot start a scheme authority-form.
    """
    if form == "auto":
        if target == "*":
            form = "asterisk"
        elif target[:1] == "/" and target[1:2] != "/":
            form = "origin"
    if form == "asterisk":
        return (form, *_NO_AUTHORITY, target, 0, *_ABSENT, *_ABSENT)
    if form == "origin":
        return _origin_form(target)
    m = _URI_REFERENCE.match(target)
    assert m is not None  # every group is optional
    scheme, host_, port_, authority, path, query, fragment = m.groups()  # one call for all
    if form == "authority" or (
        form == "auto" and scheme is None and _AUTHORITY_FORM.fullmatch(target)
    ):
        # "127.0.0.1:8080", "[::1]:443": no scheme can start so, only an authority can.
        return _authority_form(target)
    # Each component starts where the one before it ends, past its delimiter (Appendix B): its
    # offset is a sum of lengths, which costs less than the match's spans (`m.regs` is nine
    # tuples).  An absent scheme, query or fragment is at -1, as `m.start` says.
    at = 0 if scheme is None else len(scheme) + 1  # past "scheme:"
    if host_ is not None:
        at += 2  # past "//"
        userinfo, userinfo_at, host_at = None, at, at
        at += len(host_)
        if port_ is None:
            port_at = at
        else:
            port_at = at + 1
            at += 1 + len(port_)
    elif authority is not None:
        (userinfo, userinfo_at), (host_, host_at), (port_, port_at) = split_authority(
            authority, at + 2
        )
        at += 2 + len(authority)
    else:
        userinfo = None
        userinfo_at = host_at = port_at = 0
    path_at = at
    at += len(path)
    if query is None:
        query_at = -1
    else:
        query_at = at + 1  # past "?"
        at = query_at + len(query)
    return (
        "absolute" if scheme is not None else "reference",
        scheme,
        -1 if scheme is None else 0,
        userinfo,
        userinfo_at,
        host_,
        host_at,
        port_,
        port_at,
        path,
        path_at,
        query,
        query_at,
        fragment,
        -1 if fragment is None else at + 1,  # past "#"
    )


def _origin_form(target: str) -> Split:
    """RFC 9112 §3.2.1: the path runs to "?" (a "//" here is path, not authority)."""
    m = _ORIGIN_FORM.match(target)
    assert m is not None  # every group is optional
    path, query, fragment = m.groups()
    return (
        "origin",
        *_NO_AUTHORITY,
        path,
        0,
        query,
        m.start("query"),
        fragment,
        m.start("fragment"),
    )


def _authority_form(target: str) -> Split:
    """RFC 9112 §3.2.3: all of the target is the authority, and the path is empty."""
    userinfo_span, host_span, port_span = split_authority(target, 0)
    return (
        "authority",
        *_ABSENT,
        *userinfo_span,
        *host_span,
        *port_span,
        "",
        len(target),
        *_ABSENT,
        *_ABSENT,
    )
