"""A target's severity: the worst consequence over what the readers behind a proxy make of it.

A finding's own severity (`taxonomy`) ranks its kind; a target's ranks its consequence.  The
same ``..`` is noise where every reader keeps the request under its directory and critical
where one common reader climbs out of the root with it.  The readers are the server models of
`urlsan.core.backends` and the classic lenient readings (`LENIENT`): a file-path join of the
decoded path (slashes merged, as ``path.Clean`` and ``os.path.normpath`` do), ``\\`` read as
``/`` (IIS, every Windows file API), a second decode, a lenient UTF-8 decoder and ``%u``, and
NFKC's compatibility mapping.  The classes, worst first:

``critical``  some reader reaches above the root with it (``/.//..//etc/passwd`` once slashes
              merge, ``/%c0%ae%c0%ae/`` through a lenient UTF-8 decoder);
``high``      some reader climbs out of the directory RFC 3986's reading stays in: it applies a
              ``..`` that RFC 3986 does not, or to another parent (``/a//../b``, ``/a/..;/b``);
              a query parameter that, decoded twice, climbs out of the folder a handler joins
              it to (``?file=%252e%252e%252fsecrets``);
              header injection, CR or LF in any component, raw or escaped (CWE-93, CWE-113);
              NUL in the path or query, where a C string ends (CWE-158);
``medium``    an encoding whose purpose is to hide a character from a reader (`Kind.hides`: double
              encoding, overlong UTF-8, ``%u``, NUL, an escaped dot, a numeric host) and no such
              climb;
``low``       anything else: a finding no reader turns into a climb or a hidden character (a
              ``\\`` inside a name, a ``%2F`` inside a DOI, a raw space), at most low, ``info``
              when its kind says so.

`assess` computes it from a `Result`'s input and findings alone, never canonicalizing again:
the compiled twin's `Result` is enough, and a target without findings costs nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple
from urllib.parse import unquote_to_bytes

from . import backends, taxonomy
from .findings import NFKC_SEPARATORS
from .result import Finding

# Targets longer than this are ranked by their findings alone: nginx (8 KiB) and Apache
# (8,190 bytes) refuse a longer request line by default, and the readers' cost grows with it.
MAX_READ = 8 * 1024


class Severity(NamedTuple):
    """A target's severity (`taxonomy.SEVERITIES`) and why: which reader, and the path it
    reaches (``reader`` and ``path`` are empty when no reader's path decides it)."""

    level: str
    reason: str
    reader: str = ""
    path: str = ""


# CR and LF, raw or escaped, once or twice: header injection and response splitting.
_CRLF = re.compile(r"[\r\n]|%(?:25)*0[DdAa]")
_NUL = re.compile(r"\x00|%(?:25)*00")


def _decode(path: bytes) -> bytes:
    return unquote_to_bytes(path)


def _text(path: bytes) -> str:
    return path.decode("utf-8", "surrogateescape")


_PERCENT_U = re.compile(rb"%[uU]([0-9A-Fa-f]{4})")
# Overlong UTF-8 as a lax decoder reads it (RFC 3629 §10: the lead bits dropped, any byte after).
_OVERLONG = re.compile(rb"[\xc0\xc1][\x00-\xff]|\xe0[\x80-\x9f][\x00-\xff]", re.DOTALL)


def _lax_char(m: re.Match[bytes]) -> bytes:
    b = m.group(0)
    lead, last = (b[0] & 0x1F, b[1]) if len(b) == 2 else (b[1] & 0x3F, b[2])
    return chr((lead << 6) | (last & 0x3F)).encode("utf-8", "surrogatepass")


def _lenient_utf8(path: bytes) -> bytes:
    """``%uXXXX`` decoded (IIS), then every escape, overlong sequences read by their bits."""
    path = _PERCENT_U.sub(lambda m: chr(int(m.group(1), 16)).encode("utf-8", "surrogatepass"), path)
    return _OVERLONG.sub(_lax_char, _decode(path))


def _windows(path: str) -> str:
    return path.replace("\\", "/")


def _nfkc(path: str) -> str:
    return unicodedata.normalize("NFKC", path)


class Reader(NamedTuple):
    """A lenient reading of the raw path: bytes to the text a file-path join resolves."""

    name: str
    read: Callable[[bytes], str]


LENIENT: tuple[Reader, ...] = (
    # CWE-22: a handler that joins the decoded path to its root; Go's path.Clean and Python's
    # os.path.normpath merge slashes before they apply "..".
    Reader("a file-path join of the decoded path", lambda p: _text(_decode(p))),
    # IIS, and every Windows file API, read "\" as "/" (CAPEC-64).
    Reader("a Windows file path ('\\' as '/')", lambda p: _windows(_text(_decode(p)))),
    # CWE-174, CAPEC-120: a second decoder (IIS before MS01-026, a framework after the server).
    Reader("a second decode", lambda p: _windows(_text(_decode(_decode(p))))),
    # CWE-176, CAPEC-80: IIS's %u and a UTF-8 decoder that reads overlong forms.
    Reader("a lenient UTF-8 decoder", lambda p: _windows(_text(_lenient_utf8(p)))),
    # CWE-180: NFKC after decoding (ASP.NET's best-fit mapping, NFKC on file names).
    Reader("NFKC normalization", lambda p: _windows(_nfkc(_text(_decode(p))))),
)


class _Resolved(NamedTuple):
    segments: tuple[str, ...]
    removed: int  # segments a ".." removed
    above_root: bool  # a ".." with nothing left to remove


def _resolve(path: str) -> _Resolved:
    """RFC 3986 §5.2.4 over ``path``'s segments as a file-path join applies it: empty segments
    dropped first (slashes merged), a ".." above the root kept (it climbs out of the root)."""
    out: list[str] = []
    removed = 0
    above = False
    for seg in path.split("/")[1:]:
        if seg == "." or not seg:
            continue
        if seg == "..":
            if out and out[-1] != "..":
                out.pop()
                removed += 1
            else:
                out.append(seg)
                above = True
            continue
        out.append(seg)
    return _Resolved(tuple(out), removed, above)


_UNRESERVED_ESCAPE = re.compile(r"%(2[DdEe]|5[Ff]|7[Ee]|[46][1-9A-Fa-f]|[57][0-9Aa]|3[0-9])")


def rfc_reading(path: str) -> tuple[str, ...]:
    """The raw ``path`` as RFC 3986 reads it: unreserved escapes decoded (§6.2.2.2), dot
    segments removed (§5.2.4, a ".." above the root dropped), then each segment decoded."""
    plain = _UNRESERVED_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), path)
    out: list[str] = []
    for seg in plain.split("/")[1:]:
        if seg == ".":
            continue
        if seg == "..":
            if out:
                out.pop()
            continue
        out.append(seg)
    raw = "/".join(out).encode("utf-8", "surrogateescape")
    return tuple(_text(_decode(s)) for s in raw.split(b"/"))


def _joined(segments: Iterable[str]) -> str:
    return "/".join(s for s in segments if s)


def _climbs(rfc: tuple[str, ...], reached: tuple[str, ...]) -> bool:
    """Whether ``reached`` lies outside the directory RFC 3986's reading ``rfc`` stays in."""
    folder = _joined(rfc[:-1])
    path = _joined(reached)
    return bool(folder) and path != folder and not path.startswith(folder + "/")


def _shown(segments: tuple[str, ...]) -> str:
    # a "/" inside a segment (RFC 3986 reads "%2F" so) shown escaped, as `backends` shows it
    return "/" + "/".join(s.replace("%", "%25").replace("/", "%2F") for s in segments)


def _path_of(target: str) -> str | None:
    """The path of a request-target or URL as sent, or None when there is none to read."""
    if not target.startswith("/"):
        if "//" not in target.partition("?")[0]:
            return None
        target = backends.origin_form(target)
    return target.partition("#")[0].partition("?")[0]


def _server_readings(raw: bytes, names: Sequence[str]) -> Iterable[tuple[str, _Resolved]]:
    """Each server's routed path, then joined as a file path by its handler."""
    for name in names:
        traced = backends.trace(raw, backends.model(name))
        if traced is None:  # it answers 4xx itself
            continue
        joined = _resolve(traced.path)
        if joined.removed or joined.above_root:  # its handler's join applies the ".."
            reader = f"{name} (routing on {traced.path!r}, joined as a file path)"
        else:
            reader = name
        yield reader, joined._replace(removed=joined.removed + traced.removed)


def _lenient_readings(raw: bytes, readers: Sequence[Reader]) -> Iterable[tuple[str, _Resolved]]:
    for reader in readers:
        yield reader.name, _resolve(reader.read(raw))


# A path every reader splits and decodes as a file-path join of its decoded form does differs
# in what it reads only above the root.  Readers differ elsewhere where an escape may hide a
# dot (a second escape, a stray "%" before escaped digits, %u, an overlong or NFKC escape, a raw
# byte that is no UTF-8 or an NFKC look-alike), or where a ".." meets another separator than
# "/" or a parameter, or follows another separator or an empty segment.  One reader then
# speaks for all (`_readings`).
_HIDDEN_DOT = re.compile(
    r"[\udc80-\udcff" + NFKC_SEPARATORS + r"]|%(?![0-9A-Fa-f]{2})"
    r"|%(?:25|[uU]|[Cc][01]|[Ee]0|[Ff]0|[Ee]2%80|[Ee][Ff]%[Bb][89Cc])"
)
_DOT_PAIR = re.compile(r"(?:\.|%2[Ee]){2}")
_SPLIT_NEAR_DOTS = re.compile(
    # another separator or a parameter after a ".." (a "\" there is a "/" to IIS, which then
    # reads "/a/../\/" as "/" where RFC 3986 keeps the directory "\")
    r"(?:\.|%2[Ee]){2}.*?(?:[;\\]|%2[Ff]|%5[Cc])"
    # another separator, a parameter (stripped: an empty segment) or an empty segment before a
    # ".." (which may remove it, or not)
    r"|(?:[;\\]|%2[Ff]|%5[Cc]|//)(?=.*(?:\.|%2[Ee]){2})"
)
# A ".." segment (or one with a path parameter), raw or escaped once: no reader of a path
# that is neither climbs unless it holds one.
_DOTDOT = re.compile(r"(?:^|/)(?:\.|%2[Ee]){2}(?:[/;]|$)")
_DECODED_DOTDOT = re.compile(r"(?:^|/)\.\.(?:[/;]|$)")


def _readings(raw: bytes, path: str, servers: Sequence[str]) -> Iterable[tuple[str, _Resolved]]:
    """What each reader makes of the path: the servers named alone, else every server and
    every lenient reader; none when no reader can read a ".." segment in it."""
    if servers:
        return _server_readings(raw, servers)
    hidden = _HIDDEN_DOT.search(path)
    if not hidden and ".." not in path and not ("%2" in path and _DOT_PAIR.search(path)):
        return ()  # no dot pair at all, raw, escaped or hidden: nothing climbs
    if not hidden and not _SPLIT_NEAR_DOTS.search(path):
        # every reader splits as RFC 3986 does and reads as the file-path join does, but for
        # the root: the join keeps a ".." there, as a server that passes it to its handler does;
        # none climbs out of RFC 3986's directory otherwise
        if not _DOTDOT.search(path):
            return ()
        joined = _lenient_readings(raw, LENIENT[:1])
        return [(reader, got) for reader, got in joined if got.above_root]
    widest = _windows(_nfkc(_text(_lenient_utf8(_decode(raw)))))  # every decoding at once
    if not _DECODED_DOTDOT.search(widest) and not _DOTDOT.search(path):
        return ()
    return (*_server_readings(raw, backends.NAMES), *_lenient_readings(raw, LENIENT))


def _reached(target: str, servers: Sequence[str]) -> Severity | None:
    """The worst climb of any reader: critical above the root, high out of RFC's directory."""
    path = _path_of(target)
    if path is None or len(path) > MAX_READ:
        return None
    raw = path.encode("utf-8", "surrogateescape")
    rfc: tuple[str, ...] | None = None
    high: Severity | None = None
    for reader, got in _readings(raw, path, servers):
        if got.above_root:
            shown = _shown(got.segments)
            return Severity("critical", f"{reader} reaches above the root: {shown}", reader, shown)
        if high is None and got.removed:
            rfc = rfc or rfc_reading(path)
            if _climbs(rfc, got.segments):
                shown = _shown(got.segments)
                high = Severity(
                    "high",
                    f"{reader} climbs to {shown}, out of {_shown(rfc[:-1])}/ where RFC 3986 "
                    "keeps it",
                    reader,
                    shown,
                )
    return high


def _parameter_climb(target: str) -> Severity | None:
    """A query parameter whose value, decoded twice with "\\" as "/", climbs out of the folder
    a handler joins it to (``?file=%252e%252e%252fsecrets``: CWE-22, CAPEC-120)."""
    query = target.partition("#")[0].partition("?")[2]
    if len(query) > MAX_READ:
        return None
    # the whole query decoded twice first: no value climbs where it holds no ".." at all
    if ".." not in _windows(_text(_decode(_decode(query.encode("utf-8", "surrogateescape"))))):
        return None
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        decoded = _windows(_text(_decode(_decode(value.encode("utf-8", "surrogateescape")))))
        if _resolve("/" + decoded).above_root:
            reader = f"a handler joining parameter {name!r} to its folder"
            return Severity(
                "high", f"{reader} (decoded twice) climbs out of it: {decoded!r}", reader, decoded
            )
    return None


def _injection(target: str) -> Severity | None:
    """CR or LF anywhere, raw or escaped once or twice (header injection, response splitting);
    NUL in the path or query, where a C string ends (a file API opens what comes before)."""
    crlf = _CRLF.search(target)
    if crlf is not None:
        return Severity(
            "high",
            f"header injection: CR or LF ({crlf.group(0)!r}) at offset {crlf.start()}, which a "
            "reader that writes it into a header splits (CWE-93, CWE-113)",
            "a header",
        )
    nul = _NUL.search(target.partition("#")[0])
    if nul is not None:
        cut = target[: nul.start()]
        return Severity(
            "high",
            f"NUL ({nul.group(0)!r}) at offset {nul.start()}: a C string (a file API) ends "
            f"there, at {cut!r} (CWE-158)",
            "a C string",
            cut,
        )
    return None


def _by_finding(f: Finding) -> Severity:
    """What one finding says of the target without a reader's climb."""
    own = f.severity
    if f.rule == backends.FINDING:  # a protected server reads it otherwise (the decision's)
        return Severity(own, f.detail, f.detail.partition(" ")[0])
    hider = taxonomy.kind(f.rule).hides
    if hider:
        level = min(own, "medium", key=taxonomy.rank)
        return Severity(
            level,
            f"{f.rule} in the {f.component} ({f.detail!r}) hides a character from {hider}",
            hider,
        )
    level = min(own, "low", key=taxonomy.rank)
    return Severity(level, f"{f.rule} in the {f.component} ({f.detail!r}): no reader climbs")


def assess(
    target: str, findings: Sequence[Finding], servers: Sequence[str] = ()
) -> Severity | None:
    """The severity of ``target`` (a request-target or URL as sent, `Result.input`) that
    carries ``findings`` (`Result.findings`), or None for a target without findings.

    ``servers`` (names of `backends.NAMES`, the proxy's ``urlsan_backends``) decide alone when
    given: only their readings count, not the lenient ones."""
    if not findings:
        return None
    best = _injection(target)
    for f in findings:
        found = _by_finding(f)
        if best is None or taxonomy.rank(found.level) > taxonomy.rank(best.level):
            best = found
    assert best is not None
    if taxonomy.rank(best.level) < taxonomy.rank("critical"):
        climb = _reached(target, servers) or _parameter_climb(target)
        if climb is not None and taxonomy.rank(climb.level) > taxonomy.rank(best.level):
            best = climb
    return best
