"""One small function per rule.  The driver (`driver.py`) runs them in the order of `policy.RULES`.

Every function takes a component's text and returns the new text; rewrites are reported to an
`Edits` recorder with offsets into the original input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TypeVar

import idna

from . import charsets
from .pipeline import RULES
from .result import FOLD_AFTER, Edit, InvalidTarget

_HEX = "0123456789ABCDEF"


class Edits:
    """Collects the edits of one canonicalization, merged and folded (issue #13).

    A character rule's rewrite (`add`) covers exactly the characters it touched.  A run of
    rewrites by one rule ("%%%", "%41%42", "ééé") is one `Edit` from the first start to the last
    end.  Once a component holds `FOLD_AFTER` edits, each further character rewrite of it joins
    the last edit, whatever its rule and however far it lies (never backwards): the untouched
    text between is copied unchanged by the pass that rewrote, so it stands in ``after`` as the
    pass read it (`view`) and ``before`` is still ``input[start:end]``.  A structural rule's
    edit (`whole`) neither merges nor folds.

    Each rewrite is stored as its `Edit` at once; the last character edit stays open (``rule``,
    ``end``) for the next rewrite to join.  Only a rewrite that joins it starts a run (the texts
    after in ``afters``), which becomes one `Edit` in its place when a rewrite arrives that it
    cannot take: a run costs one list append per rewrite and one join, in linear time, and the
    common rewrite that joins nothing costs one tuple.

    Two components are read in two passes, each of which keeps the text's length: the host
    (lowercase-host, then the characters) and the path under backslash-as-slash.  Each pass
    folds its own edits; a folded edit of the first pass may then span characters the second
    rewrites, and the edits apply pass by pass (every offset is the input's).
    """

    __slots__ = (
        "afters",
        "component",
        "count",
        "done",
        "end",
        "folded",
        "rule",
        "strict",
        "text",
        "view",
        "view_start",
    )

    def __init__(self, strict: bool, text: str = "") -> None:
        self.done: list[Edit] = []
        self.rule = ""  # "": the last edit is no open character edit
        self.component = ""  # the last edit's
        self.count = 0  # how many edits ``component`` holds
        self.end = -1  # where the open character edit ends
        self.afters: list[str] | None = None  # a run: the texts after of the open edit
        self.folded: set[str] | None = None  # the rules of a folded open edit
        self.strict = strict
        self.text = text  # the input
        # The text the running character pass reads, at its offset in the input.
        self.view = text
        self.view_start = 0

    def add(self, rule: str, component: str, start: int, end: int, before: str, after: str) -> None:
        """A character rule rewrote ``before``, the input's text from ``start`` to ``end``."""
        if component == self.component:
            if self.rule:  # the last edit is this component's, and open
                if start == self.end and rule == self.rule:
                    self._join(end, after)
                    return
                if self.count >= FOLD_AFTER and start >= self.end:
                    self._fold(rule, start, end, after)
                    return
                if self.afters is not None:
                    self._close()
            self.count += 1
        else:
            if self.afters is not None:
                self._close()
            self.component = component
            self.count = 1
        self.rule = rule
        self.end = end
        self.done.append(_new(Edit, (rule, component, start, end, before, after)))

    def whole(
        self, rule: str, component: str, start: int, end: int, before: str, after: str
    ) -> None:
        """A structural rule rewrote a component: ``before`` is the component as it saw it."""
        if self.afters is not None:
            self._close()
        self.rule = ""
        if component == self.component:
            self.count += 1
        else:
            self.component = component
            self.count = 1
        self.done.append(_new(Edit, (rule, component, start, end, before, after)))

    def _join(self, end: int, after: str) -> None:
        """The open edit takes ``after``, the rewrite of the text up to ``end`` that follows it."""
        if self.afters is None:
            self.afters = [self.done[-1].after]
        self.afters.append(after)
        self.end = end

    def _fold(self, rule: str, start: int, end: int, after: str) -> None:
        if start > self.end:
            self._join(start, self._gap(self.end, start))
        self._join(end, after)
        if self.folded is None:
            self.folded = {self.rule}
        self.folded.add(rule)

    def _gap(self, start: int, end: int) -> str:
        """The input's text from ``start`` to ``end`` as the running pass read it."""
        at = self.view_start
        if at <= start and end <= at + len(self.view):
            return self.view[start - at : end - at]
        return self.text[start:end]

    def _close(self) -> None:
        """The open run becomes one `Edit`, in the place of its first rewrite's."""
        afters = self.afters
        assert afters is not None
        rule = self.rule
        if self.folded is not None:
            rule = folded_name(frozenset(self.folded))
            self.folded = None
        first = self.done[-1]
        start, end = first.start, self.end
        # Edit's own __new__ is Python code: tuple.__new__ is a third faster per edit.
        self.done[-1] = _new(
            Edit, (rule, first.component, start, end, self.text[start:end], "".join(afters))
        )
        self.afters = None

    def __len__(self) -> int:
        return len(self.done)

    @property
    def starts(self) -> list[int]:
        """The start of each edit so far, in order."""
        return [e.start for e in self.done]

    def repair(self, rule: str, component: str, offset: int, message: str) -> None:
        """A repair is about to happen: a strict policy refuses it instead."""
        if self.strict:
            raise InvalidTarget(rule, component, offset, message)

    def freeze(self) -> tuple[Edit, ...]:
        if self.afters is not None:
            self._close()
        self.rule = ""
        return tuple(self.done)


_new = tuple.__new__
_RANK = {rule.name: i for i, rule in enumerate(RULES)}


@lru_cache(maxsize=256)
def folded_name(rules: frozenset[str]) -> str:
    """A folded edit's rule: the names of its rules in `pipeline.RULES` order, joined by "+"."""
    return "+".join(sorted(rules, key=_RANK.__getitem__))


# --- Characters: decode-unreserved, uppercase-escape, encode-stray-percent, encode-unsafe,
#     encode-non-ascii.  Tables are built once per component and variant; a component made only
#     of allowed characters costs one fullmatch.


def pct(byte: int) -> str:
    return "%" + _HEX[byte >> 4] + _HEX[byte & 15]


def encode_char(c: str) -> str:
    """RFC 3986 §2.5: a character as its UTF-8 octets; a surrogateescape'd byte as that byte."""
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return pct(o - 0xDC00)
    return "".join(map(pct, c.encode("utf-8", "surrogatepass")))


def encode_non_ascii(text: str) -> str:
    """`encode_char` of each character: one UTF-8 encoding for the run where it can."""
    try:
        data = text.encode("utf-8", "surrogateescape")  # U+DC80-U+DCFF: the byte it stands for
    except UnicodeEncodeError:  # another lone surrogate: its own UTF-8 form, as encode_char has it
        return "".join(map(encode_char, text))
    return "%" + data.hex("%").upper()


_NOT_FOUND = ("", "")
_T = TypeVar("_T")
_RUNS, _RUN_LENGTH = 1024, 12  # runs a `Scanner` keeps (`rewrites`, `single`): how many, how long
# The groups of `Scanner.changes`, by number.
_ESCAPE, _STRAY, _ASCII, _WIDE = 1, 2, 3, 4
_GROUPS = {"escape": _ESCAPE, "stray": _STRAY, "ascii": _ASCII, "wide": _WIDE}


def _escape_table(
    unreserved: frozenset[str], lower: bool, decode: bool, upper: bool
) -> dict[str, tuple[str, str]]:
    """The two hex digits after a "%", in either case -> (replacement, rule) of the character
    rules (§6.2.2.1, §6.2.2.2); `_NOT_FOUND` when none changes the escape."""
    table: dict[str, tuple[str, str]] = {}
    for byte in range(256):
        canonical = pct(byte)
        hi, lo = canonical[1], canonical[2]
        for pair in {h + lo_ for h in {hi, hi.lower()} for lo_ in {lo, lo.lower()}}:
            if decode and chr(byte) in unreserved:
                # lower: a host's "%41" decodes straight to "a" (§6.2.2.1, §6.2.2.2), so that
                # lowercase-host, which runs first, only ever edits characters of the input.
                decoded = chr(byte).lower() if lower else chr(byte)
                table[pair] = (decoded, "decode-unreserved")
            elif upper and "%" + pair != canonical:
                table[pair] = (canonical, "uppercase-escape")
            else:
                table[pair] = _NOT_FOUND
    return table


# The path's escaped slashes, by what the policy does with them (`Scanner`'s ``slash``): kept
# as the other escapes are, refused, or decoded ("%5C" too only when backslash-as-slash is on).
_SLASH_ESCAPES: dict[str, dict[str, tuple[str, str]]] = {
    "keep": {},
    "reject": dict.fromkeys(("2F", "2f", "5C", "5c"), ("", "reject-escaped-slash")),
    "decode": dict.fromkeys(("2F", "2f"), ("/", "decode-escaped-slash")),
    "decode-all": dict.fromkeys(("2F", "2f", "5C", "5c"), ("/", "decode-escaped-slash")),
}


class Scanner:
    """The character rules of one component: an escape table and two compiled patterns.

    ``clean`` matches text that no rule changes (one fullmatch for most components);
    ``next_change`` matches from a position the text that no rule changes and then the piece
    that one rule rewrites: an escape whose table entry changes it, a run of "%" that start no
    escape, a run of ASCII characters not allowed here, a run of non-ASCII characters.  The text
    between is copied as it is.  It fails where only unchanged text is left.
    """

    __slots__ = (
        "clean",
        "component",
        "escapes",
        "kept",
        "next_change",
        "rewrites",
        "runs_left",
        "single",
    )

    def __init__(
        self,
        component: str,
        unreserved: frozenset[str],
        slash: str,
        lower: bool = False,
        decode: bool = True,
        upper: bool = True,
    ) -> None:
        self.component = component
        allowed = charsets.regex_class(charsets.ALLOWED[component])
        # The two hex digits after a "%" -> (replacement, rule); ("", "") when nothing changes.
        self.escapes = _escape_table(unreserved, lower, decode, upper)
        if component == "path":
            self.escapes |= _SLASH_ESCAPES[slash]
        # A disallowed ASCII character alone is common in hostile input: its escape from a table.
        # Runs of characters to escape, ASCII or not ("é"), join it as `_encoded` meets them.
        self.single = {
            chr(c): pct(c)
            for c in range(128)
            if chr(c) not in charsets.ALLOWED[component] and chr(c) != "%"
        }
        self.kept = _pairs(pair for pair, hit in self.escapes.items() if hit is _NOT_FOUND)
        # Text no rule changes: allowed characters and escapes already canonical, one fullmatch.
        # Runs of allowed characters between kept escapes: one repetition per escape, not one
        # per run as well (an alternation repeated costs the regex engine a step each time).
        unchanged = f"[{allowed}]*+(?:%(?:{self.kept})[{allowed}]*+)*+"
        self.clean = re.compile(unchanged).fullmatch
        rewritten = _pairs(pair for pair, hit in self.escapes.items() if hit is not _NOT_FOUND)
        # The ASCII characters to escape, as a class of their own: "[^...\x80-\U0010ffff]" says
        # the same, but compiling its range costs a loop over 65,536 characters (3 ms a class,
        # the bulk of a policy's first call without the twin).
        unsafe = charsets.regex_class(frozenset(self.single))
        # Clean text, then what follows it: each match starts where the last one ended, so
        # that one pass finds them all, in linear time.  Every character is allowed, a "%", an
        # ASCII character not allowed or a non-ASCII one, and a "%" starts a kept escape, a
        # rewritten one or none: the match fails only when the clean text runs to the end.
        changes = re.compile(
            f"{unchanged}"
            f"(?:(?P<escape>(?:%(?:{rewritten}))++)"  # a run: "%2e%2E" is one match
            "|(?P<stray>%+)(?![0-9A-Fa-f]{2})"  # §2.4: a "%" that starts no escape
            f"|(?P<ascii>[{unsafe}]+)"
            "|(?P<wide>[^\x00-\x7f]+))"
        )
        assert changes.groupindex == _GROUPS  # scan reads the groups by number
        self.next_change = changes.match
        # The same table keyed by the escape itself ("%7e"): the piece a match found.  Runs of
        # escapes that one rule rewrites ("%2e%2E" -> "..") join it as `_escape_run` meets
        # them, up to _RUNS of them of at most _RUN_LENGTH: a run seen before is then one
        # lookup, as a single escape is.
        self.rewrites = {"%" + pair: hit for pair, hit in self.escapes.items()}
        self.runs_left = _RUNS

    def unit(self, without: str = "") -> str:
        """A regex of one unit of text that no character rule changes here: a run of allowed
        characters (less those in ``without``), or an escape that is canonical already."""
        chars = charsets.regex_class(charsets.ALLOWED[self.component] - set(without))
        return f"[{chars}]++|%(?:{self.kept})"

    def scan(self, text: str, start: int, edits: Edits) -> str:
        next_change = self.next_change
        m = next_change(text)
        if m is None:  # clean: one match that fails (no `clean` first, which would fail too)
            return text
        edits.view, edits.view_start = text, start  # what a fold copies between edits
        comp = self.component
        strict = edits.strict  # repairs raise: the checks and their messages only then
        out: list[str] = []
        pos = 0
        while m is not None:
            # By number: a group's name costs a lookup.  Every match ends in one of the groups.
            kind: int = m.lastindex  # type: ignore[assignment]
            # Each group ends its match: its span is the piece, and where the next one starts.
            at, end = m.span(kind)
            m = next_change(text, end)
            piece = text[at:end]
            if kind == _ESCAPE:
                hit = self.rewrites.get(piece)
                if hit is None:  # a run of escapes not met before: it records its own edits
                    out += (text[pos:at], self._escape_run(text, at, end, start, edits))
                    pos = end
                    continue
                new, rule = hit
                if not new:
                    raise InvalidTarget(
                        rule, comp, start + at, f"escaped slash {piece} in the path"
                    )
            elif kind == _STRAY:
                rule, new = "encode-stray-percent", "%25" * len(piece)
                if strict:
                    edits.repair(rule, comp, start + at, "'%' that starts no escape")
            elif kind == _ASCII:
                rule = "encode-unsafe"
                new = self.single.get(piece) or self._encoded(piece)
                if strict:
                    edits.repair(rule, comp, start + at, f"character {piece[0]!r} not allowed")
            else:
                rule, new = "encode-non-ascii", self.single.get(piece) or self._encoded(piece)
                if strict:
                    edits.repair(rule, comp, start + at, "non-ASCII character")
            out += (text[pos:at], new)
            pos = end
            edits.add(rule, comp, start + at, start + end, piece, new)
        out.append(text[pos:])
        return "".join(out)

    def _encoded(self, piece: str) -> str:
        """A run of characters to escape, met for the first time: its escapes (§2.5: the UTF-8
        octets of each), kept in `single` for the next time while room is left."""
        new = encode_non_ascii(piece)  # ASCII characters: their one octet each, as `pct`
        self._keep(self.single, piece, new)
        return new

    def _keep(self, table: dict[str, _T], run: str, value: _T) -> None:
        """``run`` joins ``table`` while the budget lasts (_RUNS runs of at most _RUN_LENGTH
        characters, both tables together): hostile input cannot grow it without bound."""
        if self.runs_left > 0 and len(run) <= _RUN_LENGTH:
            self.runs_left -= 1
            table[run] = value

    def _escape_run(self, text: str, at: int, end: int, start: int, edits: Edits) -> str:
        """A run of escapes the table rewrites, ``text[at:end]``: one `Edits.add` per stretch of
        one rule, as the edits of its escapes one by one would join (``before`` of a stretch
        of several is the input's, as `Edits` closes a joined run)."""
        comp = self.component
        out: list[str] = []
        rule, first, done = "", at, 0  # the stretch: its rule, where it starts, in text and out
        for i in range(at, end, 3):
            escape = text[i : i + 3]
            new, this = self.rewrites[escape]
            if not new:
                raise InvalidTarget(this, comp, start + i, f"escaped slash {escape} in the path")
            if this != rule and i > at:
                before = text[first:i] if i - first == 3 else edits.text[start + first : start + i]
                edits.add(rule, comp, start + first, start + i, before, "".join(out[done:]))
                first, done = i, len(out)
            rule = this
            out.append(new)
        after = "".join(out)  # the run's; the last stretch's too when it is the whole run
        before = text[first:end] if end - first == 3 else edits.text[start + first : start + end]
        if done:
            edits.add(rule, comp, start + first, start + end, before, "".join(out[done:]))
        else:  # one rule: next time, one lookup (an escaped slash refused never gets here)
            edits.add(rule, comp, start + at, start + end, before, after)
            self._keep(self.rewrites, text[at:end], (after, rule))
        return after


def _pairs(pairs: Iterable[str]) -> str:
    """A regex matching exactly these pairs of hex digits, grouped by the first."""
    by_first: dict[str, str] = {}
    for pair in sorted(pairs):
        by_first[pair[0]] = by_first.get(pair[0], "") + pair[1]
    return "|".join(f"{hi}[{lo}]" for hi, lo in by_first.items()) or "(?!)"


@lru_cache(maxsize=64)
def scanner(
    component: str,
    unreserved_2396: bool = False,
    slash: str = "keep",
    lower: bool = False,
    decode: bool = True,
    upper: bool = True,
) -> Scanner:
    unreserved = charsets.UNRESERVED_2396 if unreserved_2396 else charsets.UNRESERVED
    return Scanner(component, unreserved, slash, lower, decode, upper)


# --- Scheme and host.


def lowercase_scheme(scheme: str, start: int, edits: Edits) -> str:
    lower = scheme.lower()
    if lower != scheme:
        edits.add("lowercase-scheme", "scheme", start, start + len(scheme), scheme, lower)
    return lower


_IP_LITERAL = re.compile(charsets.IP_LITERAL)  # its ABNF, RFC 6874's zone and why: charsets.py


_IPV6_ADDRESS = re.compile(charsets.IPV6_ADDRESS).fullmatch


def ip_literal(host: str) -> re.Match[str] | None:
    """The parts of an IP-literal host (groups ``future``, or ``address``, ``percent``, ``zone``),
    or None when ``host`` is none."""
    m = _IP_LITERAL.fullmatch(host)
    if m is None or m["future"] is not None or _IPV6_ADDRESS(m["address"]):
        return m
    return None


_HOST_LETTERS = re.compile(r"%[0-9A-Fa-f]{2}|(?P<upper>[A-Z]+)")
_LDH = re.compile(charsets.LDH_NAME).fullmatch  # RFC 1034 §3.5 letters, digits, hyphens


def lowercase_host(host: str, start: int, edits: Edits) -> str:
    """§6.2.2.1: a host is case-insensitive.  Runs on the input's host, before the character
    rules, so every edit covers characters of the input: ASCII letters only (a non-ASCII name is
    IDNA's or its escapes' business), and never an escape's hex digits (uppercase-escape's, §2.1).
    """
    if _LDH(host):  # the common case: one edit for the whole name
        lower = host.lower()  # ASCII only, as _LDH matched: str.lower's fast path
        if lower != host:
            edits.add("lowercase-host", "host", start, start + len(host), host, lower)
        return lower
    out: list[str] = []
    pos = 0
    for m in _HOST_LETTERS.finditer(host):
        upper = m.group("upper")
        if upper is not None:
            out += (host[pos : m.start()], upper.lower())
            pos = m.end()
            edits.add(
                "lowercase-host", "host", start + m.start(), start + m.end(), upper, upper.lower()
            )
    out.append(host[pos:])
    return "".join(out)


_REG_NAME_CLEAN = re.compile(f"[{charsets.regex_class(charsets.REG_NAME)}]*").fullmatch


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
    a_label = ".".join(labels).lower()
    # ASCII labels pass through unchecked: the character rules then run on the A-label with the
    # input's offsets, so a name they would change ("zƽ.\x03") is no usable IDN; its UTF-8 is
    # escaped instead.
    return a_label if _REG_NAME_CLEAN(a_label) else None


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


_DIGITS = frozenset("0123456789")


def ends_in_number(host: str) -> bool:
    """The WHATWG host parser's "ends in a number" check: a last label of digits, or "0x"…"""
    last = host.rstrip(".").rpartition(".")[2]
    if last[:1] not in _DIGITS:  # most names end in letters: one set test
        return False
    return last.isascii() and (last.isdigit() or (last[0] == "0" and last[1:2] in ("x", "X")))


# --- Path.


def has_dot_segments(path: str) -> bool:
    """Whether ``path`` holds a "." or ".." segment (RFC 3986 §5.2.4): between two "/", after
    the last, before the first, or the whole path.  Substring tests, each a C loop: a regex
    search would try its pattern at every position."""
    if "/." not in path and path[:1] != ".":
        return False  # most paths
    return (
        "/./" in path
        or "/../" in path
        or path.endswith(("/.", "/.."))
        or path.startswith(("./", "../"))
        or path in (".", "..")
    )


def remove_dot_segments(path: str) -> tuple[str, int]:
    """RFC 3986 §5.2.4 on an absolute path; returns the path and how many ".." rose above "/"."""
    out: list[str] = []
    above = 0
    segments = path.split("/")[1:]
    for seg in segments:
        if seg == "..":
            if out:
                out.pop()
            else:
                above += 1
        elif seg != ".":
            out.append(seg)
    if segments and segments[-1] in (".", ".."):
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
