"""How the servers behind a proxy read a request-target: `read` a target as one server would.

The attacks a sanitizing proxy exists to stop live in the gap between what the proxy (and
the rules on it) reads and what the server behind it routes on: nginx reads ``/a/..%2f/b`` as
``/b``, Tomcat ``/a/..;/b`` as ``/b``, Jetty ``/a/%u002e%u002e/b`` as ``/b``, where RFC 3986
reads each as a path under ``/a/``.  Each server is a `Model` of `backend_models` (its steps
in order, as data); this module walks them.

>>> from urlsan.core import backends
>>> backends.read("/a/..%2f/b", "nginx")
Reading(refused=False, path='/b')
>>> backends.read("/a/..;/b", "tomcat")
Reading(refused=False, path='/b')
>>> backends.read("/a/..%2f/b", "apache")
Reading(refused=True, path=None)

`plain` is the one scan that says whether any modeled server can read a target otherwise
than as its bytes: most targets need no model run at all.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from .backend_models import (
    CUSTOM,
    DECODERS,
    DOTS,
    MODELS,
    OPTIONS,
    TRAITS,
    Decoder,
    Dots,
    Model,
    Step,
    custom,
)
from .result import Finding

NAMES: tuple[str, ...] = tuple(MODELS)
MEASURED: tuple[str, ...] = tuple(n for n, m in MODELS.items() if m.measured)


class Reading(NamedTuple):
    """What one server makes of one target."""

    refused: bool  # the server answers 4xx without routing
    path: str | None  # the decoded path it routes on; None when refused


class _Refused(Exception):
    pass


# A target no modeled server reads otherwise than as its bytes: an origin-form path of the
# characters every server passes through untouched, no empty, "." or ".." segment, and a query
# of the characters no server refuses: no escape of a control byte or of a byte UTF-8 never
# holds (C0, C1, F5-FF), which lighttpd refuses in the query too.  One match decides it;
# everything else goes through the models.
_QUERY_ESCAPE = rb"%(?:[2-6][0-9A-Fa-f]|7[0-9A-Ea-e]|[89ABab][0-9A-Fa-f]|[CDcd][2-9A-Fa-f]" + (
    rb"|[Ee][0-9A-Fa-f]|[Ff][0-4]|(?![0-9A-Fa-f]{2}))"
)
_PLAIN = re.compile(
    rb"(?:/(?!\.\.?(?:[/?]|\Z))[A-Za-z0-9\-._~!$&'()*,=:@]+)*/?"
    rb"(?:\?(?:[A-Za-z0-9\-._~!$&'()*+,=:@/?;]|" + _QUERY_ESCAPE + rb")*)?\Z"
)


def plain(target: bytes) -> bool:
    """True when every modeled server reads ``target``'s path as its own bytes."""
    return _PLAIN.match(target) is not None and target[:1] == b"/"


def model(name: str, **settings: str) -> Model:
    """Server ``name``'s model, with ``settings`` (`backend_models.OPTIONS`) other than its
    defaults: ``model("nginx", merge_slashes="off")``; or the model of a trait spec
    (``"custom:decode,merge-slashes,dots-clamp"``: `backend_models.TRAITS` in order)."""
    base = MODELS.get(name) or _resolved(name)
    if not settings:
        return base
    return _configured(name, tuple(sorted(settings.items())))


@functools.lru_cache(maxsize=64)
def _resolved(name: str) -> Model:
    if name.startswith(CUSTOM):
        return custom(tuple(t.strip() for t in name[len(CUSTOM) :].split(",") if t.strip()))
    raise ValueError(
        f"unknown server {name!r}: one of {', '.join(NAMES)}, or {CUSTOM}TRAIT,TRAIT,..."
    )


@functools.lru_cache(maxsize=64)
def _configured(name: str, settings: tuple[tuple[str, str], ...]) -> Model:
    known = OPTIONS.get(name, {})
    changes: dict[str, Step | tuple[Step, ...] | None] = {}
    for setting, value in settings:
        if setting not in known:
            raise ValueError(f"{name} has no modeled setting {setting!r}: {', '.join(known)}")
        if value not in known[setting]:
            raise ValueError(
                f"{name} {setting}: {value!r} is not one of {', '.join(known[setting])}"
            )
        changes.update(known[setting][value])
    steps: list[Step] = []
    for step in MODELS[name].steps:
        key = f"{step.op}:{step.arg}" if isinstance(step.arg, str) and step.arg else step.op
        new = changes.get(key, step)
        if isinstance(new, Step):
            steps.append(new)
        elif new is not None:
            steps += new
    shown = ", ".join(f"{k}={v}" for k, v in settings)
    return MODELS[name]._replace(steps=tuple(steps), settings=f"{MODELS[name].settings} ({shown})")


def read(target: str | bytes, name: str, *, host: str | None = None, **settings: str) -> Reading:
    """How the server ``name`` reads the origin-form ``target``: one of `NAMES` in its default
    configuration or with ``settings`` (`model`), a trait spec, or any value
    ``urlsan_backends`` takes (`parse_names`: ``"go,go-mux"``,
    ``"tomcat@intranet.example,nginx"``), its host-scoped entries chosen by ``host``
    (`for_host`; None: the entries for every host only).

    ``target`` is the request-target as sent (str: its UTF-8 bytes).  The path is text: bytes
    that are no UTF-8 as the server maps them (`backend_models`, the ``charset`` step).  Where a
    value names several servers and they read ``target`` alike, that is the reading; where they
    differ, it is the first (in the value's order) that reads it otherwise than RFC 3986, as
    `divergences` finds, else the first that routes it: the reading the value protects against.

    >>> read("/a/..;/b", "tomcat@intranet.example,nginx", host="intranet.example")
    Reading(refused=False, path='/b')
    >>> read("/a/..;/b", "tomcat@intranet.example,nginx", host="wiki.example")
    Reading(refused=False, path='/a/..;/b')
    """
    names = _servers(name, host) if name not in MODELS else (name,)
    if len(names) == 1:
        chosen = model(names[0], **settings)
    elif settings:
        raise ValueError(f"settings apply to one server, and {name!r} names {len(names)}")
    else:
        return _one_of(target, names)
    raw = _origin_form(target)
    if plain(raw):
        return Reading(False, raw.partition(b"?")[0].decode("ascii"))
    return walk(raw, chosen)


@functools.lru_cache(maxsize=64)
def _servers(value: str, host: str | None) -> tuple[str, ...]:
    """The servers of the ``urlsan_backends`` value ``value`` behind the proxy for ``host``."""
    names = for_host(parse_names(value, ""), host)
    if not names:
        raise ValueError(f"{value!r} names no server for {host or 'every host'!r}")
    return names


def _one_of(target: str | bytes, names: tuple[str, ...]) -> Reading:
    found = readings(target, names)
    if len(set(found.values())) == 1:
        return found[names[0]]
    text = target if isinstance(target, str) else bytes(target).decode("utf-8", "surrogateescape")
    diverging = _diverging(found, text)  # not plain: its readings would be one
    if diverging:
        return found[diverging[0].server]
    return next((r for r in found.values() if not r.refused), found[names[0]])


def _origin_form(target: str | bytes) -> bytes:
    raw = target.encode("utf-8", "surrogateescape") if isinstance(target, str) else bytes(target)
    if not raw.startswith(b"/"):
        raise ValueError(f"not an origin-form request-target (it starts with '/'): {target!r}")
    return raw


def readings(target: str | bytes, names: tuple[str, ...] = NAMES) -> dict[str, Reading]:
    """`read` for each of ``names`` (default configurations), the target scanned once: a
    `plain` target costs one match whatever the number of servers."""
    raw = _origin_form(target)
    if plain(raw):
        same = Reading(False, raw.partition(b"?")[0].decode("ascii"))
        return dict.fromkeys(names, same)
    return {name: walk(raw, model(name)) for name in names}


class Divergence(NamedTuple):
    """One server reads a target otherwise than RFC 3986 does (`divergences`)."""

    server: str
    path: str  # the path the server routes on
    rfc: str  # the path as RFC 3986 reads it: segments decoded, "/" inside one kept as %2F
    climbs: bool  # the server's path leaves a directory the RFC reading stays in


def rfc_segments(canonical: str) -> tuple[str, ...]:
    """The path of the canonical origin-form target ``canonical`` as RFC 3986 reads it: split
    on "/" (RFC 3986 §3.3), then each segment decoded (§2.1; UTF-8, a byte that is none kept
    as a surrogate escape).  The ``/.`` that guards a path starting with ``//`` (§5.2.4's
    output, which would read as an authority) is no segment of it."""
    path = canonical.partition("?")[0].partition("#")[0]
    if path.startswith("/.//"):
        path = path[2:]
    return tuple(urllib.parse.unquote(s, errors="surrogateescape") for s in path.split("/"))


def _shown(segments: tuple[str, ...]) -> str:
    return "/".join(s.replace("%", "%25").replace("/", "%2F") for s in segments)


def _climbs(rfc: tuple[str, ...], server: tuple[str, ...]) -> bool:
    # Named directories only: merging empty segments ("//") moves no request out of a folder.
    folders = [s for s in rfc[:-1] if s]
    return [s for s in server if s][: len(folders)] != folders


def divergences(
    forwarded: str | bytes, names: tuple[str, ...] = MEASURED, *, canonical: str | None = None
) -> tuple[Divergence, ...]:
    """The servers of ``names`` that route the request-target ``forwarded`` on another path
    than RFC 3986 reads in ``canonical`` (urlsan's canonical form of the same target; default:
    ``forwarded`` itself, when that is what is forwarded).  A server that refuses the target
    reads nothing: it answers 4xx itself.  A `plain` target costs one scan."""
    raw = _origin_form(forwarded)
    if canonical is None:
        canonical = raw.decode("utf-8", "surrogateescape")
        if plain(raw):
            return ()
    return _diverging(readings(raw, names), canonical)


def _diverging(found: dict[str, Reading], canonical: str) -> tuple[Divergence, ...]:
    """The `Divergence` of each reading of ``found`` from RFC 3986's of ``canonical``."""
    rfc = rfc_segments(canonical)
    out = []
    for name, reading in found.items():
        if reading.refused or reading.path is None:
            continue
        server = tuple(reading.path.split("/"))
        if server != rfc:
            out.append(Divergence(name, reading.path, _shown(rfc), _climbs(rfc, server)))
    return tuple(out)


SCOPE = "@"  # "tomcat@intranet.example": a server behind the proxy for one host only


def parse_names(value: str | Sequence[str], option: str = "backends") -> tuple[str, ...]:
    """The entries of ``urlsan_backends`` given as a list or comma-separated, in order, once
    each; `ValueError` names ``option`` (unless empty) and the first unknown server or trait.

    An entry is a name of `NAMES` or a trait spec: ``custom:`` and the first trait, the items
    after it that are no server name being its further traits
    (``nginx,custom:decode,merge-slashes,tomcat``).  Either may end in ``@HOST`` or
    ``@HOST:PORT``: the server is behind the proxy for requests to that host only
    (``tomcat@intranet.example,nginx@wiki.example``; see `for_host`).  A spec's scope ends
    it.  Entries are given back as written (``custom:decode,merge-slashes@wiki.example``)."""
    items = value.split(",") if isinstance(value, str) else [n for v in value for n in v.split(",")]
    entries: list[list[str]] = []
    for item in (n.strip() for n in items if n.strip()):
        if _open_spec(entries) and item.partition(SCOPE)[0] not in NAMES and not _starts(item):
            entries[-1].append(item)
        else:
            entries.append([item])
    names = tuple(dict.fromkeys(",".join(e) for e in entries))
    for name in names:
        _check_entry(name, option)
    return names


def _starts(item: str) -> bool:
    return item.startswith(CUSTOM)


def _open_spec(entries: list[list[str]]) -> bool:
    """Whether the last entry is a trait spec that takes more traits (no scope yet)."""
    return bool(entries) and _starts(entries[-1][0]) and SCOPE not in entries[-1][-1]


def _check_entry(entry: str, option: str) -> None:
    name, _, host = entry.partition(SCOPE) if not _starts(entry) else entry.rpartition(SCOPE)
    if _starts(entry) and not name:
        name, host = entry, ""
    if SCOPE in entry and not host.strip():
        raise ValueError(_named(option, f"{entry!r} names no host after {SCOPE!r}"))
    if name not in NAMES and not _starts(name):
        raise ValueError(
            _named(
                option,
                f"unknown server {name!r}; choose from {', '.join(NAMES)}, "
                f"or {CUSTOM}TRAIT,TRAIT,... (traits: {', '.join(TRAITS)})",
            )
        )
    try:
        model(name)
    except ValueError as e:
        raise ValueError(_named(option, str(e))) from None


def _named(option: str, message: str) -> str:
    return f"{option}: {message}" if option else message


def scope(entry: str) -> tuple[str, str | None]:
    """An entry of `parse_names` as its server (a name or a trait spec) and the host it is
    scoped to (lower case), or None for every host."""
    name, at, host = entry.rpartition(SCOPE)
    if not at:
        return entry, None
    return name, host.strip().lower().rstrip(".")


def for_host(entries: tuple[str, ...], authority: str | None) -> tuple[str, ...]:
    """The servers of ``entries`` (`parse_names`) behind the proxy for a request to
    ``authority`` (its Host header or absolute-form authority, as sent): those for every host,
    and those scoped to its host, or to its host and port when the scope names one.  Each
    server once, in the order given."""
    if not any(SCOPE in e for e in entries):
        return entries
    host, port = _host_port(authority or "")
    out: dict[str, None] = {}
    for entry in entries:
        name, scoped = scope(entry)
        if scoped is None or scoped in (host, f"{host}:{port}" if port else None):
            out.setdefault(name, None)
    return tuple(out)


def _host_port(authority: str) -> tuple[str, str]:
    """``authority`` as lower-case host (no trailing dot) and port ("" when none)."""
    hostport = authority.rpartition("@")[2].strip().lower()
    host, colon, port = hostport.rpartition(":")
    if not colon or "]" in port or not port.isdigit():
        host, port = hostport, ""
    return host.rstrip("."), port


def url_authority(url: str) -> str | None:
    """The authority of an absolute URL (``//`` after the scheme), None for a target."""
    scheme, sep, rest = url.partition("://")
    if not sep or "/" in scheme:
        return None
    return rest[: min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))]


def described(entries: tuple[str, ...]) -> str:
    """The entries in words, as the proxy's start-up line says them: "intranet.example as
    tomcat, wiki.example as nginx, every host as go" ("tomcat, nginx" when none is scoped)."""
    by_host: dict[str, list[str]] = {}
    for entry in entries:
        name, host = scope(entry)
        by_host.setdefault(host or "", []).append(name)
    every = by_host.pop("", [])
    if not by_host:
        return ", ".join(every)
    parts = [f"{host} as {' and '.join(names)}" for host, names in by_host.items()]
    if every:
        parts.append(f"every host as {' and '.join(every)}")
    return ", ".join(parts)


FINDING = "backend-divergence"  # the rule of the finding a divergence is reported as


def said(d: Divergence) -> str:
    """A divergence in words, as a finding's detail and a refusal's reason say it."""
    climbs = ", out of a directory RFC 3986 keeps it in" if d.climbs else ""
    return f"{d.server} routes it as {d.path!r} where RFC 3986 reads {d.rfc!r}{climbs}"


def findings(diverging: tuple[Divergence, ...]) -> tuple[Finding, ...]:
    """A finding per server that reads the target otherwise (`FINDING`, in the path)."""
    return tuple(Finding(FINDING, "path", 0, said(d)) for d in diverging)


def origin_form(url: str) -> str:
    """The origin-form request-target of a canonical URL (its path and query; "/" for an empty
    path), or the URL itself when it is one already: what a server behind a proxy receives."""
    if url.startswith("/"):
        return url.partition("#")[0]
    after = url.partition("//")[2] if "//" in url.partition("?")[0] else ""
    cut = min((i for i in (after.find(c) for c in "/?#") if i >= 0), default=len(after))
    rest = after[cut:].partition("#")[0]
    return rest if rest.startswith("/") else "/" + rest


def walk(raw: bytes, model: Model) -> Reading:
    """``raw`` through every step of ``model`` (no shortcut)."""
    state = raw
    try:
        for step in model.steps:
            if step.op == "charset":
                return Reading(False, _charset(state, str(step.arg)))
            state = _OPS[step.op](state, step, raw)
    except _Refused:
        return Reading(True, None)
    return Reading(False, state.decode("utf-8", "surrogateescape"))


class Trace(NamedTuple):
    """How one server reached the path it routes on (`trace`): what `urlsan.core.severity`
    ranks a target by."""

    path: str  # the path it routes on, as `read` gives it
    removed: int  # segments a ".." of the server's own dot-segment step removed
    above_root: bool  # a ".." went above the root and the server kept it (HAProxy's "keep")


def trace(raw: bytes, model: Model) -> Trace | None:
    """`walk`, telling what its dot-segment step did; None when the server refuses ``raw``."""
    state = raw
    removed, above = 0, False
    try:
        for step in model.steps:
            if step.op == "dots":
                state, n, up = _remove_dots(state, DOTS[str(step.arg)])
                removed, above = removed + n, above or up
            elif step.op == "charset":
                return Trace(_charset(state, str(step.arg)), removed, above)
            else:
                state = _OPS[step.op](state, step, raw)
    except _Refused:
        return None
    return Trace(state.decode("utf-8", "surrogateescape"), removed, above)


# --- the operations


def _refuse_raw(path: bytes, step: Step, raw: bytes) -> bytes:
    assert isinstance(step.arg, frozenset)
    if not step.arg.isdisjoint(path):
        raise _Refused
    return path


def _split_line(path: bytes, step: Step, raw: bytes) -> bytes:
    assert isinstance(step.arg, frozenset)
    end = len(path)
    while end and path[end - 1] in step.arg:
        end -= 1
    if not step.arg.isdisjoint(path[:end]):
        raise _Refused
    return path[:end]


# What follows the target on a request line HAProxy reads words of: the version.
_AFTER_TARGET = b" HTTP/1.1\r\n"


def _refuse_high_haproxy(path: bytes, step: Step, raw: bytes) -> bytes:
    """HAProxy 2.6's h1_parse_msg_rquri: while four bytes remain, the little-endian word at
    the scan is skipped if ``w - 0x24242424`` has no byte's top bit set and ``w - 0x7f7f7f7f``
    (both subtractions of the whole word, with borrows) has one; the rest is read byte by
    byte, where a byte above 0x7E is 400.  (A byte below 0x24 always ends the skip.)"""
    line = path + _AFTER_TARGET
    i = 0
    while i + 4 <= len(line):
        x = (int.from_bytes(line[i : i + 4], "little") - 0x24242424) & 0xFFFFFFFF
        if x & 0x80808080:
            break
        if not ((x - 0x5B5B5B5B) & 0xFFFFFFFF) & 0x80808080:
            break
        i += 4
    if any(c > 0x7E for c in path[i:]):
        raise _Refused
    return path


def _refuse_raw_utf8(path: bytes, step: Step, raw: bytes) -> bytes:
    try:
        path.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused from None
    return path


def _cut(path: bytes, step: Step, raw: bytes) -> bytes:
    ends = [i for i in (path.find(c.encode()) for c in str(step.arg)) if i >= 0]
    return path[: min(ends)] if ends else path


def _escape_length(path: bytes, i: int) -> int:
    """Jetty's reading of the escape at ``i``: "%uXXXX" or "%XX", whatever the digits are."""
    return 6 if path[i + 1 : i + 2] == b"u" else 3


def _cut_escaped(path: bytes, step: Step, raw: bytes) -> bytes:
    ends = frozenset(str(step.arg).encode())
    for i, c, _ in _httpuri(path):
        if c in ends:
            return path[:i]
    return path


def _httpuri(path: bytes) -> Iterator[tuple[int, int, bool]]:
    """Jetty 9.4's HttpURI scan of a path: each character that is not an escape's digit, with
    its offset and whether it is within a path parameter.  Outside a parameter, the characters
    of an escape are its digits whatever they are ("%2;" is one escape); within one, ";" and
    "/" count wherever they are."""
    param = False
    i = 0
    while i < len(path):
        c = path[i]
        yield i, c, param
        if c == 0x25 and not param:
            i += _escape_length(path, i)
            continue
        if c == 0x3B:
            param = True
        elif c == 0x2F:
            param = False
        i += 1


def _leading_slashes(path: bytes, step: Step, raw: bytes) -> bytes:
    return b"/" + path.lstrip(b"/") if path.startswith(b"//") else path


def _lstrip_slashes(path: bytes, step: Step, raw: bytes) -> bytes:
    return b"/" + path.lstrip(b"/")


def _backslash(path: bytes, step: Step, raw: bytes) -> bytes:
    return path.replace(b"\\", b"/")


def _uppercase_escapes(path: bytes, step: Step, raw: bytes) -> bytes:
    return re.sub(rb"%[0-9A-Fa-f]{2}", lambda m: m.group(0).upper(), path)


def _merge_slashes(path: bytes, step: Step, raw: bytes) -> bytes:
    return re.sub(rb"//+", b"/", path)


def _strip_params(path: bytes, step: Step, raw: bytes) -> bytes:
    return b"/".join(seg.split(b";", 1)[0] for seg in path.split(b"/"))


def _refuse_dot_param(path: bytes, step: Step, raw: bytes) -> bytes:
    for seg in path.split(b"/"):
        name, semi, _ = seg.partition(b";")
        if not semi:
            continue
        try:
            dots = _decode(name, _PLAIN_DECODE, b"") in (b".", b"..")
        except _Refused:  # not an escape: not a dot segment either
            continue
        if dots:
            raise _Refused
    return path


_HEX = {c: int(chr(c), 16) for c in b"0123456789abcdefABCDEF"}


def _hex(c: int, decoder: Decoder) -> int | None:
    if decoder.loose_hex:
        d = (c & 0x1F) + (c >> 6) * 0x19 - 0x10  # Jetty's TypeUtil.convertHexDigit
        return d if 0 <= d <= 15 else None
    return _HEX.get(c)


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _escape(path: bytes, i: int, decoder: Decoder) -> tuple[bytes, int] | None:
    """The bytes the escape at ``path[i]`` ("%") stands for and where it ends; None: invalid."""
    if decoder.u_escapes and path[i + 1 : i + 2] == b"u":
        digits = path[i + 2 : i + 6]
        values = [_hex(c, decoder) for c in digits]
        if len(values) < 4 or None in values:
            return None
        code = 0
        for v in values:
            code = code * 16 + (v or 0)
        return chr(code).encode("utf-8", "surrogatepass"), i + 6
    if i + 2 >= len(path):
        return None
    hi, lo = _hex(path[i + 1], decoder), _hex(path[i + 2], decoder)
    if hi is None or lo is None:
        return None
    return bytes([hi * 16 + lo]), i + 3


def _jetty_path(path: bytes, step: Step, raw: bytes) -> bytes:
    """Jetty 9.4's HttpURI: the last parameter of the last segment is cut, and the path is
    decoded only when it is "encoded": an escape outside a parameter, a parameter followed by
    "/", or a segment starting with "."."""
    mark = -1  # where the current parameter starts (its last ";"), or -1
    encoded = False
    for i, c, param in _httpuri(path):
        if c == 0x25:
            encoded = encoded or not param
        elif c == 0x3B:
            mark = i
        elif c == 0x2E and i and path[i - 1] == 0x2F:
            encoded = True
        elif c == 0x2F and mark >= 0:
            encoded = True
            mark = -1
    if mark >= 0:
        path = path[:mark]
    if not encoded:
        return path
    return _decode(path, _JETTY_DECODE, raw)


def _check_decoded(path: bytes, step: Step, raw: bytes) -> bytes:
    _decode(path, step, raw)  # raises _Refused
    return path


def _decode(path: bytes, step: Step, raw: bytes) -> bytes:
    decoder = DECODERS[str(step.arg)]
    out = bytearray()
    text: list[str] = []  # the same path with escapes as Latin-1 (latin1_fallback)
    i = 0
    while i < len(path):
        if path[i] == 0x25:
            i = _decode_escape(path, i, decoder, out, text)
        elif path[i] == 0x3B and decoder.params:
            end = path.find(b"/", i)
            i = len(path) if end < 0 else end
        else:
            i = _copy_run(path, i, decoder, out, text)
    if decoder.utf8 or decoder.latin1_fallback:
        try:
            bytes(out).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            if decoder.utf8:
                raise _Refused from None
            return "".join(text).encode("utf-8", "surrogatepass")
    return bytes(out)


def _copy_run(path: bytes, i: int, decoder: Decoder, out: bytearray, text: list[str]) -> int:
    """The raw bytes from ``i`` up to the next escape (or parameter) into ``out``; where they
    end.  Raw bytes above 0x7F are Latin-1 characters for ``raw_latin1`` (a WSGI request line);
    for ``latin1_fallback`` the text copy keeps them as UTF-8, bytes that are none as surrogate
    escapes."""
    end = path.find(b"%", i)
    end = len(path) if end < 0 else end
    if decoder.params:
        semi = path.find(b";", i, end)
        end = end if semi < 0 else semi
    run = path[i:end]
    if decoder.latin1_fallback:
        text.append(run.decode("utf-8", "surrogateescape"))
        out += run
    elif decoder.raw_latin1 and not run.isascii():
        out += run.decode("latin-1").encode("utf-8")
    else:
        out += run
    return end


def _kept(value: bytes, decoder: Decoder) -> bool:
    """Whether the escape of ``value`` stays as it is."""
    if decoder.only_dots:
        return value != b"."
    if decoder.only_unreserved:
        return not (len(value) == 1 and value[0] in _UNRESERVED)
    return len(value) == 1 and value[0] in decoder.keep and value[0] not in decoder.refuse


def _decode_escape(path: bytes, i: int, decoder: Decoder, out: bytearray, text: list[str]) -> int:
    """The escape at ``i`` into ``out``; where it ends."""
    found = _escape(path, i, decoder)
    if found is None:
        if decoder.invalid == "refuse":
            raise _Refused
        out.append(0x25)
        return i + 1
    value, end = found
    if decoder.latin1_fallback:
        text.append(chr(value[0]) if end == i + 3 else value.decode("utf-8", "surrogatepass"))
    if _kept(value, decoder):
        out += path[i:end]
    elif len(value) == 1 and value[0] in decoder.refuse:
        raise _Refused

    else:
        out += value
    return end


def _dots(path: bytes, step: Step, raw: bytes) -> bytes:
    """RFC 3986 §5.2.4 on segments, with the server's answer above the root."""
    return _remove_dots(path, DOTS[str(step.arg)])[0]


def _remove_dots(path: bytes, how: Dots) -> tuple[bytes, int, bool]:
    """`_dots`, with the number of segments its ".." removed and whether one went above the
    root and stayed there (``keep``): what `trace` reports."""
    segments = path.split(b"/")[1:]
    out: list[bytes] = []
    last = len(segments) - 1
    trailing = False
    removed = 0
    kept_above = False
    for n, seg in enumerate(segments):
        if seg == b".":
            trailing = n == last
            continue
        if seg == b"..":
            if not out or out[-1] == b"..":
                if how.above_root == "refuse":
                    raise _Refused
                if how.above_root == "keep":
                    out.append(seg)
                    kept_above = True
            else:
                out.pop()
                removed += 1
            trailing = n == last
            continue
        trailing = False
        out.append(seg)
    result = b"/" + b"/".join(out)
    if trailing and out and how.trailing == "slash":
        result += b"/"
    return result, removed, kept_above


def _lowercase(path: bytes, step: Step, raw: bytes) -> bytes:
    return path.lower()


def _charset(path: bytes, how: str) -> str:
    if how == "bytes":
        return path.decode("utf-8", "surrogateescape")
    if how == "text":  # %uD83D%uDE00: two UTF-16 code units, one character
        text = path.decode("utf-8", "surrogatepass")
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if how == "replace":
        return path.decode("utf-8", "replace")
    try:
        return path.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        if how == "refuse":
            raise _Refused from None
        return path.decode("latin-1")


_PLAIN_DECODE = Step("decode", "jetty")
_JETTY_DECODE = Step("decode", "jetty")

_OPS: dict[str, Callable[[bytes, Step, bytes], bytes]] = {
    "refuse-raw": _refuse_raw,
    "refuse-raw-utf8": _refuse_raw_utf8,
    "refuse-high-haproxy": _refuse_high_haproxy,
    "split-line": _split_line,
    "cut": _cut,
    "cut-escaped": _cut_escaped,
    "leading-slashes": _leading_slashes,
    "lstrip-slashes": _lstrip_slashes,
    "merge-slashes": _merge_slashes,
    "backslash": _backslash,
    "uppercase-escapes": _uppercase_escapes,
    "refuse-decoded": _refuse_raw,
    "strip-params": _strip_params,
    "jetty-path": _jetty_path,
    "refuse-dot-param": _refuse_dot_param,
    "decode": _decode,
    "check-decoded": _check_decoded,
    "dots": _dots,
    "lowercase": _lowercase,
}
