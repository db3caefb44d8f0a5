"""One small function per rule.  `canonical.py` runs them in the order of `policy.RULES`.

Every function takes a component's text and returns the new text; rewrites are reported to an
`Edits` recorder with offsets into the original input.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache

import idna

from urlsan.core import charsets
from urlsan.core.result import Edit, InvalidTarget

_HEX = "0123456789ABCDEF"


class Edits:
    """Collects edits; adjacent edits of one rule in one component merge into one."""

    __slots__ = ("items", "strict")

    def __init__(self, strict: bool) -> None:
        self.items: list[list[object]] = []
        self.strict = strict

    def add(self, rule: str, component: str, start: int, end: int, before: str, after: str) -> None:
        items = self.items
        if items:
            last = items[-1]
            if last[0] == rule and last[1] == component and last[3] == start:
                last[3] = end
                last[4] = str(last[4]) + before
                last[5] = str(last[5]) + after
                return
        items.append([rule, component, start, end, before, after])

    def repair(self, rule: str, component: str, offset: int, message: str) -> None:
        """A repair is about to happen: a strict policy refuses it instead."""
        if self.strict:
            raise InvalidTarget(rule, component, offset, message)

    def freeze(self) -> tuple[Edit, ...]:
        return tuple(Edit(*item) for item in self.items)  # type: ignore[arg-type]


# --- Characters: decode-unreserved, uppercase-escape, encode-stray-percent, encode-unsafe,
#     encode-non-ascii.  One regex pass per component; the tables are built once per variant.


def pct(byte: int) -> str:
    return "%" + _HEX[byte >> 4] + _HEX[byte & 15]


def encode_char(c: str) -> str:
    """RFC 3986 §2.5: a character as its UTF-8 octets; a surrogateescape'd byte as that byte."""
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return pct(o - 0xDC00)
    return "".join(map(pct, c.encode("utf-8", "surrogatepass")))


class Scanner:
    """The character rules of one component, as a compiled pattern plus an escape table."""

    __slots__ = ("component", "escapes", "pattern", "reject")

    def __init__(self, component: str, unreserved: frozenset[str], slash: str) -> None:
        self.component = component
        allowed = charsets.ALLOWED[component]
        unsafe = "".join(
            charsets.regex_class(frozenset(chr(c))) for c in range(128)
            if chr(c) not in allowed and chr(c) != "%"
        )
        self.pattern = re.compile(
            r"(?P<esc>%[0-9A-Fa-f]{2})"
            r"|(?P<stray>(?:%(?![0-9A-Fa-f]{2}))+)"
            rf"|(?P<unsafe>[{unsafe}]+)"
            r"|(?P<nonascii>[^\x00-\x7f]+)"
        )
        # escape text -> (replacement, rule), only for escapes that change.
        self.escapes: dict[str, tuple[str, str]] = {}
        for byte in range(256):
            canonical = pct(byte)
            hi, lo = canonical[1], canonical[2]
            for h in {hi, hi.lower()}:
                for lo_ in {lo, lo.lower()}:
                    text = "%" + h + lo_
                    if chr(byte) in unreserved:
                        self.escapes[text] = (chr(byte), "decode-unreserved")
                    elif text != canonical:
                        self.escapes[text] = (canonical, "uppercase-escape")
        self.reject: frozenset[str] = frozenset()
        if component == "path" and slash != "keep":
            variants = {"%2F", "%2f", "%5C", "%5c"}
            if slash == "reject":
                self.reject = frozenset(variants)
            else:  # decode: "%2F" -> "/"; "%5C" only becomes "/" when backslash-as-slash is on
                targets = ("%2F", "%2f", "%5C", "%5c") if slash == "decode-all" else ("%2F", "%2f")
                for text in targets:
                    self.escapes[text] = ("/", "decode-escaped-slash")

    def scan(self, text: str, start: int, edits: Edits) -> str:
        out: list[str] = []
        pos = 0
        comp = self.component
        for m in self.pattern.finditer(text):
            kind = m.lastgroup
            s = m.group()
            if kind == "esc":
                if s in self.reject:
                    raise InvalidTarget("reject-escaped-slash", comp, start + m.start(),
                                        f"escaped slash {s} in the path")
                hit = self.escapes.get(s)
                if hit is None:
                    continue
                new, rule = hit
            elif kind == "stray":
                rule, new = "encode-stray-percent", "%25" * len(s)
                edits.repair(rule, comp, start + m.start(), "'%' that starts no escape")
            elif kind == "unsafe":
                rule, new = "encode-unsafe", "".join(pct(ord(c)) for c in s)
                edits.repair(rule, comp, start + m.start(), f"character {s[0]!r} not allowed")
            else:
                rule, new = "encode-non-ascii", "".join(map(encode_char, s))
                edits.repair(rule, comp, start + m.start(), "non-ASCII character")
            out.append(text[pos : m.start()])
            out.append(new)
            pos = m.end()
            edits.add(rule, comp, start + m.start(), start + m.end(), s, new)
        if not out:
            return text
        out.append(text[pos:])
        return "".join(out)


@lru_cache(maxsize=64)
def scanner(component: str, unreserved_2396: bool = False, slash: str = "keep") -> Scanner:
    unreserved = charsets.UNRESERVED_2396 if unreserved_2396 else charsets.UNRESERVED
    return Scanner(component, unreserved, slash)


# --- Scheme and host.


def lowercase_scheme(scheme: str, start: int, edits: Edits) -> str:
    lower = scheme.lower()
    if lower != scheme:
        edits.add("lowercase-scheme", "scheme", start, start + len(scheme), scheme, lower)
    return lower


_ESCAPE_LOWER = re.compile(r"%[0-9a-f]{2}")
_IP_LITERAL = re.compile(r"\[(?:[0-9A-Fa-f:.]+(?:%25[A-Za-z0-9\-._~%]+)?|[vV][0-9A-Fa-f]+\.["
                         + charsets.regex_class(charsets.UNRESERVED | charsets.SUB_DELIMS | {":"})
                         + r"]+)\]")


def is_ip_literal(host: str) -> bool:
    """RFC 3986 §3.2.2 IP-literal (IPv6address, with RFC 6874's zone ID, or IPvFuture)."""
    if not _IP_LITERAL.fullmatch(host):
        return False
    if host[1] in "vV":
        return True
    try:
        ipaddress.IPv6Address(host[1:-1].split("%25", 1)[0])
    except ValueError:
        return False
    return True


def lowercase_host(host: str, start: int, edits: Edits) -> str:
    # §6.2.2.1: host is case-insensitive; the hex of an escape stays uppercase (§2.1).
    lower = host.lower()
    if "%" in lower:
        lower = _ESCAPE_LOWER.sub(lambda m: m.group().upper(), lower)
    if lower != host:
        edits.add("lowercase-host", "host", start, start + len(host), host, lower)
    return lower


def idna_host(host: str) -> str | None:
    """UTS 46 processing to an A-label host, or None when the name is not a valid IDN."""
    if any(0xDC80 <= ord(c) <= 0xDCFF for c in host) or "%" in host:
        return None
    try:
        labels = [
            label if label.isascii() else idna.encode(label, uts46=True).decode("ascii")
            for label in host.split(".")
        ]
    except (idna.IDNAError, UnicodeError, ValueError):
        return None
    return ".".join(labels).lower()


def _ipv4_number(part: str) -> int | None:
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
        if digits == "":
            return 0
    elif len(part) > 1 and part[0] == "0":
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    try:
        return int(digits, base) if digits.isascii() and digits.isalnum() else None
    except ValueError:
        return None


def parse_ipv4(host: str) -> str | None:
    """The WHATWG IPv4 parser (URL Standard §4.4): dotted-decimal form of a numeric host, or None.

    Browsers and many HTTP stacks read "0x7f.1", "0177.0.0.1" and "2130706433" as 127.0.0.1.
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 0 < len(parts) <= 4 or "" in parts:
        return None
    numbers = [_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    nums = [n for n in numbers if n is not None]
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        return None
    value = nums[-1]
    for i, n in enumerate(nums[:-1]):
        value += n << (8 * (3 - i))
    return ".".join(str((value >> s) & 255) for s in (24, 16, 8, 0))


def ends_in_number(host: str) -> bool:
    last = host.rstrip(".").rpartition(".")[2]
    return last.isascii() and (last.isdigit() or last[:2].lower() == "0x")


# --- Path.

_DOT_SEGMENT = re.compile(r"(?:^|/)\.\.?(?:/|$)")


def has_dot_segments(path: str) -> bool:
    return "." in path and _DOT_SEGMENT.search(path) is not None


def remove_dot_segments(path: str) -> tuple[str, int]:
    """RFC 3986 §5.2.4 on an absolute path; returns the path and how many ".." rose above "/"."""
    out: list[str] = []
    above = 0
    segments = path.split("/")[1:]
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        if seg == "..":
            if out:
                out.pop()
            else:
                above += 1
        elif seg != ".":
            out.append(seg)
            continue
        if i == last:
            out.append("")  # "/a/.." and "/a/." end in a slash
    return "/" + "/".join(out), above


def remove_dot_segments_relative(path: str) -> str:
    """Dot segments of a relative-path reference: leading ".." must stay, they climb the base."""
    resolved, above = remove_dot_segments("/" + path)
    rest = resolved[1:]
    if above:
        return "../" * above + rest
    if rest == "" and path:
        return "./"  # "a/.." and "." both mean the base's directory, which "" does not
    return rest


def merge_slashes(path: str) -> str:
    return re.sub(r"//+", "/", path)


# --- Query.


def query_name(pair: str) -> str:
    return pair.partition("=")[0]
