"""Detectors that report what a traffic auditor wants to see, without rewriting anything.

They read the raw input components, so every offset points into the input.  Each name is stable:
it appears in audit logs and in README's table of findings.
"""

from __future__ import annotations

import re
from typing import Any

from .result import Finding

# Escape sequences that classic attacks hide behind (see docs/security.md).
_ESCAPE_TRICKS = re.compile(
    r"%(?:"  # a literal first character lets the regex engine skip to each "%"
    r"(?P<double_encoding>25[0-9A-Fa-f]{2})"  # decodes to another escape: a second decoder bites
    r"|(?P<percent_u>[uU][0-9A-Fa-f]{4})"  # IIS's non-standard %uXXXX
    r"|(?P<nul_escape>00)"
    r"|(?P<crlf_escape>0[DdAa])"  # header injection / response splitting
    # Overlong UTF-8 (RFC 3629 §10): C0/C1 lead bytes, E0 80-9F, F0 80-8F.
    r"|(?P<overlong_utf8>[Cc][01]%[89ABab][0-9A-Fa-f]|[Ee]0%[89][0-9A-Fa-f]|[Ff]0%8[0-9A-Fa-f])"
    r")"
)
_RAW_OVERLONG = re.compile("[\udcc0\udcc1][\udc80-\udcbf]")  # the same, as raw bytes
_ESCAPED_SLASH = re.compile(r"%(?:2[Ff]|5[Cc])")
_DOT_ESCAPES = re.compile(r"%2[Ee]")
_DOT_STARTS = (".", "%2e", "%2E")  # how a segment that starts with a dot, raw or escaped, starts
_DOT_START = re.compile(r"/((?:\.|%2[Ee])[^/]*)")  # such a segment, after its "/"

# Finding's own __new__ is Python code: tuple.__new__ builds the same value from a finding's
# fields in a list.  (Called through functools.partial it costs more: tuple.__new__ takes no
# vectorcall, so partial joins the argument tuples first.)
_new = tuple.__new__

FINDING_NAMES: tuple[str, ...] = (
    "dot-segment",
    "encoded-dot-segment",
    "dot-segment-above-root",
    "path-parameter-dotdot",
    "escaped-slash",
    "backslash",
    "double-encoding",
    "percent-u",
    "nul-escape",
    "crlf-escape",
    "overlong-utf8",
    "numeric-host",
    "userinfo",
    "invalid-idn",
    "invalid-port",
    "invalid-ip-literal",
)


# The findings of one canonicalization, one per rule and component: the first occurrence and a
# count.  A megabyte of "../" is one finding counted 333,333 times, not 333,333 objects.  A plain
# dict of (rule, component) -> [rule, component, offset, detail, count] (each canonicalization
# makes one: a literal costs less than a class's instance), whose values hold their `Finding`'s
# fields in order, so that `freeze` builds them all in C.
Findings = dict[tuple[str, str], list[Any]]


def add(out: Findings, rule: str, component: str, offset: int, detail: str) -> None:
    key = (rule, component)
    item = out.get(key)
    if item is None:
        out[key] = [rule, component, offset, detail, 1]
    else:
        item[4] += 1


def freeze(out: Findings) -> tuple[Finding, ...]:
    if len(out) == 1:  # the most
        (fields,) = out.values()
        return (_new(Finding, fields),)
    return tuple([_new(Finding, fields) for fields in out.values()])


def escapes(text: str, component: str, start: int, out: Findings) -> None:
    """Escape tricks anywhere in userinfo, path, query or fragment."""
    # Every trick holds "%0" (NUL, CR, LF), "%25", "%u" or "%U", or an overlong lead byte's
    # escape before its next "%" ("c0%", "c1%", "e0%", "f0%"): substring tests rule out most
    # escaped text before a regex call does.
    if "%" in text and (
        "%0" in text
        or "%25" in text
        or "%u" in text
        or "%U" in text
        or "0%" in text
        or "1%" in text
    ):
        for m in _ESCAPE_TRICKS.finditer(text):
            name = (m.lastgroup or "").replace("_", "-")
            add(out, name, component, start + m.start(), m.group())
    # A raw byte stands for itself as a lone surrogate (surrogateescape): the text is not ASCII.
    if not text.isascii() and ("\udcc0" in text or "\udcc1" in text):
        for m in _RAW_OVERLONG.finditer(text):
            add(out, "overlong-utf8", component, start + m.start(), m.group())


def path(text: str, start: int, absolute: bool, out: Findings) -> bool:
    """Traversal-shaped paths: dot segments, raw or encoded, "..;", escaped and raw backslashes.
    True when a segment starts with a dot, raw or escaped (the driver's steps ask that too)."""
    # Substring tests rule out most paths before any regex does.
    escaped = "%" in text
    if escaped and ("%2F" in text or "%2f" in text or "%5C" in text or "%5c" in text):
        for m in _ESCAPED_SLASH.finditer(text):
            add(out, "escaped-slash", "path", start + m.start(), m.group())
    if "\\" in text:
        add(out, "backslash", "path", start + text.index("\\"), "\\")
    first = text.startswith(_DOT_STARTS)  # a first segment that starts with a dot
    if not first and "/." not in text and not (escaped and ("/%2e" in text or "/%2E" in text)):
        return False  # no segment starts with a dot, raw or escaped: "/a.html" (the most)
    # Counted by str methods where they can (most such paths), else segment by segment.
    if text[:1] != "/" or ";" in text or not _dot_segments(text, start, out):
        _dot_starts(text, start, first, absolute, out)
    return True


def _dot_segments(text: str, start: int, out: Findings) -> bool:
    """`path`'s findings of an absolute path with no ";" whose dot segments are all raw
    ("/a/./b/../c") or all escaped ("/a/%2e%2E/c"), counted in C.  False, with nothing added,
    for `_dot_starts` to decide: both kinds at once, or a ".." that may rise above the root."""
    segments = read = text.split("/")
    name = "dot-segment"
    if "%2e" in text or "%2E" in text:
        if "." in segments or ".." in segments:
            return False
        read = text.replace("%2e", ".").replace("%2E", ".").split("/")  # segment by segment
        name = "encoded-dot-segment"
    dots, dotdots = read.count("."), read.count("..")
    if dotdots:
        first = read.index("..")
        # RFC 3986 §5.2.4: each ".." pops a segment.  None rises above the root when the
        # segments before the first ".." (less the "." among them) are as many as the "..".
        if first - 1 - read[1:first].count(".") < dotdots:
            return False
        if dots:
            dot = read.index(".")
            if dot < first:
                first = dot
    elif dots:
        first = read.index(".")
    else:
        return True  # ".hidden", "..x": segments that only start with a dot
    offset = start + len("/".join(segments[:first])) + 1
    out[name, "path"] = [name, "path", offset, segments[first], dots + dotdots]
    return True


def _dot_starts(text: str, start: int, first: bool, absolute: bool, out: Findings) -> None:
    """`path`'s findings segment by segment, where `_dot_segments` cannot count them: a ";", a
    relative path, raw and escaped dot segments together, a ".." that may rise above the root.
    ``first``: the first segment starts with a dot."""
    # Only the segments that start with a dot are looked at: each is found after its "/" (the
    # first after one put in front), and the segments between are counted by their "/".
    if first:
        text, start, index = "/" + text, start - 1, -1
    else:
        index = 0
    depth = pos = 0
    for m in _DOT_START.finditer(text):
        at = m.start()
        between = text.count("/", pos, at)  # segments that start with no dot
        index += between + 1
        depth += between  # RFC 3986 §5.2.4 counts empty segments too
        pos = m.end()
        raw = m[1]
        seg = _DOT_ESCAPES.sub(".", raw) if "%" in raw else raw
        if seg == "." or seg == "..":
            name = "dot-segment" if raw == seg else "encoded-dot-segment"
            add(out, name, "path", start + at + 1, raw)
            if seg == ".." and absolute and index > 0:
                if depth == 0:
                    add(out, "dot-segment-above-root", "path", start + at + 1, raw)
                else:
                    depth -= 1
        elif ";" in seg and seg.partition(";")[0] in (".", ".."):
            # Tomcat and others strip ";params" after splitting: "/..;/" climbs a level there.
            add(out, "path-parameter-dotdot", "path", start + at + 1, raw)
        elif index > 0:
            depth += 1


def host(text: str, start: int, out: Findings) -> None:
    """A host that holds what should have split off: a ":" whose port is no number
    ("a:-1"), or a "[" that opens no valid IP-literal ("[::1").  Both stay in the host, where
    their characters are escaped: the authority splits where it did in the input."""
    if text[:1] == "[":
        add(out, "invalid-ip-literal", "host", start, text)
    elif ":" in text:
        colon = text.rindex(":")
        add(out, "invalid-port", "host", start + colon, text[colon:])


def userinfo(text: str, start: int, out: Findings) -> None:
    add(out, "userinfo", "userinfo", start, "password" if ":" in text else "user")
