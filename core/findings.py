"""Detectors that report what a traffic auditor wants to see, without rewriting anything.

They read the raw input components, so every offset points into the input, and they look at what
one and two decodes of a component make of it, as the backends behind a proxy may decode it: an
escape whose hex digits are escaped themselves, bytes that are no UTF-8 (and what a lax UTF-8
decoder reads in them), a ".." that climbs once decoded again, a "\\" read as "/".  Each name is
stable: it appears in audit logs and in README's table of findings; its severity and weaknesses
are `taxonomy.KINDS`'.  The compiled twin (`_speedups.c`) reports the same findings.
"""

from __future__ import annotations

import re
import unicodedata
from codecs import utf_8_decode
from typing import Any
from urllib.parse import unquote

from .result import MAX_OFFSETS, Finding
from .taxonomy import KINDS

# Escape sequences that classic attacks hide behind (see docs/security.md).
_ESCAPE_TRICKS = re.compile(
    r"%(?:"  # a literal first character lets the regex engine skip to each "%"
    r"(?P<double_encoding>25[0-9A-Fa-f]{2})"  # decodes to another escape: a second decoder bites
    r"|(?P<percent_u>[uU][0-9A-Fa-f]{4})"  # IIS's non-standard %uXXXX
    r"|(?P<nul_escape>00)"
    r"|(?P<crlf_escape>0[DdAa])"  # header injection / response splitting
    r")"
)
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_ESCAPED_DIGITS = re.compile(r"%25[0-9A-Fa-f]?%")  # "%25" before an escape: a hex digit's?
_STRAY = re.compile(r"%(?![0-9A-Fa-f]{2}|[uU][0-9A-Fa-f]{4})")  # RFC 3986 §2.4; %u is its own
# A run of escapes that starts with a byte above 127: the bytes must be UTF-8 (RFC 3986 §2.5).
_HIGH_RUN = re.compile(r"%[89A-Fa-f][0-9A-Fa-f](?:%[0-9A-Fa-f]{2})*")
# Unicode format characters that reorder or hide text (Trojan Source, CVE-2021-42574): the
# bidirectional controls and the invisible ones (general category Cf, as a URL may carry them).
_FORMAT = "\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
_FORMAT_CHAR = re.compile(f"[{_FORMAT}]")
# Raw characters no URL holds: space, C0 and C1 controls, format characters, and raw bytes that
# were no UTF-8 (surrogateescape'd), overlong ones (RFC 3629 §10: C0/C1 leads) first.
_RAW_ODD = re.compile(
    f"(?P<overlong>[\udcc0\udcc1][\udc80-\udcbf])|(?P<byte>[\udc80-\udcff])"
    f"|(?P<space> )|(?P<format>[{_FORMAT}])|(?P<control>[\x00-\x1f\x7f-\x9f])"
)
_RAW_NAMES = {
    "overlong": "overlong-utf8",
    "byte": "invalid-utf8",
    "space": "raw-space",
    "format": "format-char",
    "control": "control-char",
}
# The characters that Unicode compatibility normalization (NFKC, UAX #15) turns into dots, "/",
# "\\" or "%": every such code point, as tests/core/test_findings.py derives them from
# unicodedata.  A server or framework that normalizes the decoded path so (ASP.NET and IIS
# "best fit" mappings, Python's and Java's NFKC on file names) reads "/．．/" as "/../".  The
# compiled twin is handed them (`canonical._hand_over_tables`) and looks for them too.
NFKC_SEPARATORS = "\u2024\u2025\u2026\ufe19\ufe30\ufe52\ufe68\ufe6a\uff05\uff0e\uff0f\uff3c"
_NFKC_CHAR = re.compile(
    "|".join(
        [f"[{NFKC_SEPARATORS}]"]
        + ["".join(f"%{b:02X}" for b in c.encode()) for c in NFKC_SEPARATORS]
    ),
    re.IGNORECASE,
)
# What a second decoder, a lax UTF-8 decoder, IIS's %u or a "\\" separator may turn into a dot
# segment or a separator: looked at by `_decoded_climb` only where one of them is there.
_DECODE_TRICK = re.compile(r"\\|%(?:25|[uU]|[CcEeFf][01]|2[Ff]|5[Cc]|(?![0-9A-Fa-f]{2}))")
_ANY_ESCAPE = re.compile(r"%(?:[uU]([0-9A-Fa-f]{4})|([0-9A-Fa-f]{2}))")
# Overlong UTF-8 as a lax decoder reads it (lead bits dropped, any byte after it): "%c0%2e" is
# ".".  `_decode` leaves each escaped byte above 127 as its surrogateescape character.
_LAX = re.compile("[\udcc0\udcc1].|\udce0[\udc80-\udc9f].|\udcf0[\udc80-\udc8f]..", re.DOTALL)
_ESCAPED_SLASH = re.compile(r"%(?:2[Ff]|5[Cc])")
_DOT_ESCAPES = re.compile(r"%2[Ee]")
_DOT_STARTS = (".", "%2e", "%2E")  # how a segment that starts with a dot, raw or escaped, starts
_DOT_START = re.compile(r"/((?:\.|%2[Ee])[^/]*)")  # such a segment, after its "/"

# Finding's own __new__ is Python code: tuple.__new__ builds the same value from a finding's
# fields in a list.  (Called through functools.partial it costs more: tuple.__new__ takes no
# vectorcall, so partial joins the argument tuples first.)
_new = tuple.__new__

# Every finding kind, as `taxonomy.KINDS` lists them with their severity and weaknesses.
FINDING_NAMES: tuple[str, ...] = tuple(KINDS)


# The findings of one canonicalization, one per rule and component: the first occurrence, a
# count, and the offsets of the first `MAX_OFFSETS`.  A megabyte of "../" is one finding counted
# 333,333 times, not 333,333 objects.  A plain dict of (rule, component) -> [rule, component,
# offset, detail, count, offsets] (each canonicalization makes one: a literal costs less than a
# class's instance), whose values hold their `Finding`'s fields in order, so that `freeze`
# builds them all in C.
Findings = dict[tuple[str, str], list[Any]]


def add(out: Findings, rule: str, component: str, offset: int, detail: str) -> None:
    key = (rule, component)
    item = out.get(key)
    if item is None:
        out[key] = [rule, component, offset, detail, 1, ()]
    else:
        item[4] += 1
        offsets = item[5]
        if len(offsets) < MAX_OFFSETS:
            item[5] = (*offsets, offset) if offsets else (item[2], offset)


def freeze(out: Findings) -> tuple[Finding, ...]:
    if len(out) == 1:  # the most
        (fields,) = out.values()
        return (_new(Finding, fields),)
    return tuple([_new(Finding, fields) for fields in out.values()])


def escapes(text: str, component: str, start: int, out: Findings) -> None:
    """Escape tricks anywhere in userinfo, path, query or fragment, and the raw characters no URL
    holds (space, controls, format characters, bytes that are no UTF-8), added in the order of
    their offsets, as the compiled twin meets them."""
    found: list[tuple[int, int, str, str]] = []  # (offset, tie, name, detail)
    if "%" in text:
        # Every trick holds "%0" (NUL, CR, LF), "%25", "%u" or "%U": substring tests rule out
        # most escaped text before a regex call does.
        if "%0" in text or "%25" in text or "%u" in text or "%U" in text:
            for m in _ESCAPE_TRICKS.finditer(text):
                name = (m.lastgroup or "").replace("_", "-")
                found.append((m.start(), 1, name, m.group()))
        _percent(text, found)
    # A raw byte stands for itself as a lone surrogate (surrogateescape): not printable, as no
    # control or format character is; a space is.
    if " " in text or not text.isprintable():
        for m in _RAW_ODD.finditer(text):
            found.append((m.start(), 1, _RAW_NAMES[m.lastgroup or ""], m.group()))
    if len(found) > 1:
        found.sort()
    for at, _, name, detail in found:
        add(out, name, component, start + at, detail)


def _percent(text: str, found: list[tuple[int, int, str, str]]) -> None:
    """What one decode of ``text`` makes of it: a stray "%" (a decoder's guess), an escape that
    a second decode reads ("%%32%65", "%25%32%65" are "%2e" once decoded; "%25" with two hex
    digits is `_ESCAPE_TRICKS`' own), escaped bytes that are no UTF-8, escaped format
    characters."""
    stray = _STRAY.search(text)
    if stray is not None:
        for m in _STRAY.finditer(text, stray.start()):
            found.append((m.start(), 0, "stray-percent", "%"))
    if stray is not None or ("%25" in text and _ESCAPED_DIGITS.search(text)):
        _escape_once_decoded(text, found)
    for m in _HIGH_RUN.finditer(text):
        _utf8(text, m.start(), bytes.fromhex(m.group().replace("%", "")), found)


def _escape_once_decoded(text: str, found: list[tuple[int, int, str, str]]) -> None:
    """double-encoding where one decode makes an escape that "%25" with two raw hex digits does
    not: its "%" is stray, or its hex digits are escaped themselves."""
    chars: list[str] = []
    froms: list[int] = []  # where each character of the decoded text starts in ``text``
    escaped: list[bool] = []  # and whether it was an escape there
    pos = 0
    for m in _ESCAPE.finditer(text):
        for i in range(pos, m.start()):
            chars.append(text[i])
            froms.append(i)
            escaped.append(False)
        chars.append(chr(int(m[1], 16)))
        froms.append(m.start())
        escaped.append(True)
        pos = m.end()
    for i in range(pos, len(text)):
        chars.append(text[i])
        froms.append(i)
        escaped.append(False)
    for m in _ESCAPE.finditer("".join(chars)):
        k = m.start()
        if escaped[k] and not escaped[k + 1] and not escaped[k + 2]:
            continue  # "%25" and two hex digits: reported already
        at = froms[k]
        end = froms[k + 2] + (3 if escaped[k + 2] else 1)
        found.append((at, 1, "double-encoding", text[at:end]))


def _utf8(text: str, at: int, run: bytes, found: list[tuple[int, int, str, str]]) -> None:
    """The escaped bytes ``run`` at ``text[at:]``: overlong or other invalid UTF-8 (RFC 3629
    §3, §10: C0, C1 and F5-FF never occur; a lax decoder reads "%c0%2e" as "."), and format
    characters escaped as valid UTF-8 ("%E2%80%AE")."""
    k = 0
    view = memoryview(run)  # slices that copy nothing: a long run decodes in linear time
    while k < len(run):
        base = k
        try:
            piece = utf_8_decode(view[k:], "strict", True)[0]
            k = len(run)
        except UnicodeDecodeError as e:
            bad = k + e.start
            piece = run[k:bad].decode()
            lead = run[bad]
            second = run[bad + 1] if bad + 1 < len(run) else -1
            overlong = lead in (0xC0, 0xC1) or (
                (lead == 0xE0 and 0x80 <= second <= 0x9F)
                or (lead == 0xF0 and 0x80 <= second <= 0x8F)
            )
            size = min(2, len(run) - bad) if overlong else e.end - e.start
            where = at + 3 * bad
            name = "overlong-utf8" if overlong else "invalid-utf8"
            found.append((where, 1, name, text[where : where + 3 * size]))
            k = bad + size
        if not piece.isascii():
            chars = 0  # counted up to each match, so that a long run costs linear time
            for fmt in _FORMAT_CHAR.finditer(piece):
                base += len(piece[chars : fmt.start()].encode())
                chars = fmt.start()
                where = at + 3 * base
                size = 3 * len(fmt.group().encode())
                found.append((where, 1, "format-char", text[where : where + size]))


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
    if escaped and ("%2e" in text or "%2E" in text):
        _escaped_dots(text, start, out)
    _nfkc_separators(text, escaped, start, out)
    trick = _DECODE_TRICK.search(text) if escaped or "\\" in text else None
    found = dotted = _dotted(text, escaped)
    if "\\" in text:
        # IIS and every WHATWG parser read "\\" as "/": so do the dot segments' detectors.
        text = text.replace("\\", "/")
        found = _dotted(text, escaped)
    first = text.startswith(_DOT_STARTS)  # a first segment that starts with a dot
    # Counted by str methods where they can (most such paths), else segment by segment.
    if found and (text[:1] != "/" or ";" in text or not _dot_segments(text, start, out)):
        _dot_starts(text, start, first, absolute, out)
    if trick is not None and absolute:
        _decoded_climb(text, start, out)
    return dotted


def _dotted(text: str, escaped: bool) -> bool:
    """Whether a segment starts with a dot, raw or escaped ("/a.html": no, the most)."""
    return (
        text.startswith(_DOT_STARTS)
        or "/." in text
        or (escaped and ("/%2e" in text or "/%2E" in text))
    )


def _escaped_dots(text: str, start: int, out: Findings) -> None:
    """escaped-dot: a "%2E" in a segment that is no dot segment ("index%2Epdf", ".%68tac…"):
    the escape hides an extension or a dot file from a filter on the raw target."""
    pos = 0
    for segment in text.replace("\\", "/").split("/"):
        if "%2e" in segment or "%2E" in segment:
            head = _DOT_ESCAPES.sub(".", segment).partition(";")[0]
            if head != "." and head != "..":
                at = _DOT_ESCAPES.search(segment)
                assert at is not None
                add(out, "escaped-dot", "path", start + pos + at.start(), at.group())
        pos += len(segment) + 1


def _nfkc_separators(text: str, escaped: bool, start: int, out: Findings) -> None:
    """nfkc-separator: a segment in which NFKC makes a "/", "\\" or "%" (from "／", "＼",
    "％"), or which NFKC makes a dot segment ("．．", "%EF%BC%8E", "‥;x"), with the character
    raw or escaped as UTF-8.  A dot-like character in a longer segment ("wait…what") is none."""
    # Only a non-ASCII path, or one with an escape of a 3-byte UTF-8 lead ("%E…"), may hold one.
    if text.isascii() and not (escaped and ("%E" in text or "%e" in text)):
        return
    if _NFKC_CHAR.search(text) is None:
        return
    pos = 0
    for segment in text.replace("\\", "/").split("/"):
        found = _NFKC_CHAR.search(segment)
        if found is not None:
            decoded = unquote(segment, errors="surrogateescape")
            folded = unicodedata.normalize("NFKC", decoded)
            head = folded.partition(";")[0]  # a servlet container's path parameter goes
            if head == "." or head == ".." or _separators(folded) > _separators(decoded):
                add(out, "nfkc-separator", "path", start + pos + found.start(), found.group())
        pos += len(segment) + 1


def _separators(text: str) -> int:
    return text.count("/") + text.count("\\") + text.count("%")


def _decode(text: str) -> str:
    """One decode as the laxest backend does it: every escape, IIS's %uXXXX, overlong UTF-8
    read without its checks ("\xc0\xae" and "\xc0\x2e" are "."), "\\" as "/"."""

    def one(m: re.Match[str]) -> str:
        if m[1]:
            return chr(int(m[1], 16))
        b = int(m[2], 16)
        return chr(b if b < 0x80 else 0xDC00 + b)

    def lax(m: re.Match[str]) -> str:
        b = [ord(c) & 0xFF for c in m.group()]  # a surrogateescape character's byte
        value = b[0] & (0x1F if len(b) == 2 else 0x0F if len(b) == 3 else 0x07)
        for c in b[1:]:
            value = value << 6 | (c & 0x3F)
        return chr(value)

    return _LAX.sub(lax, _ANY_ESCAPE.sub(one, text)).replace("\\", "/")


def _decoded_climb(text: str, start: int, out: Findings) -> None:
    """decoded-dot-segment-above-root: a ".." that one or two decodes (`_decode`) make climb
    above the root, where the raw path does not."""
    if ("dot-segment-above-root", "path") in out or _climbs(_DOT_ESCAPES.sub(".", text)):
        return  # the raw path climbs already
    once = _decode(text)
    for view in (once, _decode(once)):
        if _climbs(view):
            add(out, "decoded-dot-segment-above-root", "path", start, view[:200])
            return


def _climbs(path: str) -> bool:
    """An absolute path with a ".." that RFC 3986 §5.2.4 would take above the root."""
    depth = 0
    segments = path.split("/")[1:]
    for i, segment in enumerate(segments):
        if segment == "..":
            if depth == 0:
                return True
            depth -= 1
        elif segment != "." and i < len(segments) - 1:
            depth += 1
    return False


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
    count = dots + dotdots
    offsets: tuple[int, ...] = ()
    if count > 1:  # where each is: the first MAX_OFFSETS
        at, found = start, []
        for segment, seen in zip(segments, read, strict=True):
            if seen == "." or seen == "..":
                found.append(at)
                if len(found) == MAX_OFFSETS:
                    break
            at += len(segment) + 1
        offsets = tuple(found)
    out[name, "path"] = [name, "path", offset, segments[first], count, offsets]
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
