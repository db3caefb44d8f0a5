"""The per-line work of ``urlsan canon``: `Processor` turns a block of input lines into its
output (splitting, decoding, canonicalization, formatting), in this process or in a worker;
`OnError` says what becomes of a bad line."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..core import InvalidTarget, Policy, Result, backends, canonicalize, many
from .blocks import Block, Done, Entry
from .formats import FORMATS, Format, Mode
from .inputs import MAX_LINE_BYTES
from .spans import read_span
from .terminal import Colors

_BLANKS = many.BLANKS


class OnError(Enum):
    """What becomes of a bad line (it is reported on stderr whatever this says)."""

    PASS = "pass"  # written unchanged
    SKIP = "skip"  # left out
    FAIL = "fail"  # the run stops before it


@dataclass(frozen=True, slots=True)
class Processor:
    """Turns a `Block` into its output: a plain picklable value that worker processes receive
    once, when they start."""

    policy: Policy
    mode: Mode = Mode.URL
    form: str = "auto"
    on_error: OnError = OnError.PASS
    dedupe: bool = False
    max_bytes: int = MAX_LINE_BYTES
    sep: bytes = b"\n"
    name: str = "<stdin>"
    colors: bool = False
    backends: tuple[str, ...] = ()  # --backends: servers whose reading differs is a finding

    @property
    def numbers_lines(self) -> bool:
        """Whether the output shows line numbers (`blocks.Work`): all but plain URLs and
        --json, and --dedupe, whose duplicates name the line they repeat."""
        return self.mode not in (Mode.URL, Mode.JSON) or self.dedupe

    def __call__(self, block: Block) -> Done:
        lines, utf8 = self._texts(block)
        fmt = FORMATS[self.mode](self.sep.decode(), self.name, Colors(self.colors))
        if self.dedupe:
            return self._keyed(lines, block.first, fmt)
        if self.mode is Mode.URL and utf8 and not self.backends:
            return self._urls(lines, block.first, fmt)
        return self._plain(lines, block.first, fmt)

    def _texts(self, block: Block) -> tuple[list[str], bool]:
        """The block's lines as text, and whether all of it was UTF-8.  Bytes that are not
        stand as lone surrogates (surrogateescape), which `_problem` finds."""
        if block.texts is not None:
            return list(block.texts), False
        data, utf8 = block.data, True
        if block.span is not None:
            data = read_span(*block.span, self.sep, self.max_bytes)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text, utf8 = data.decode("utf-8", "surrogateescape"), False
        lines = text.split(self.sep.decode())
        lines.pop()  # every line ends with the separator: the last piece is empty
        if block.first == 1 and lines and lines[0].startswith("\ufeff"):
            lines[0] = lines[0][1:]  # a byte order mark is not part of the first URL
        return lines, utf8

    def _urls(self, lines: list[str], first: int, fmt: Format) -> Done:
        """Plain URLs out, from lines known to be UTF-8: the common case, one call for the
        block (`many.urls`, a loop in C with the twin).  The first bad line hands the rest of
        the block to `_plain`, which says why it is bad.  So does a line that may be too long:
        a character takes at most 4 bytes in UTF-8, so none of the others is."""
        urls = many.urls(lines, self.policy, self.form, _BLANKS, self.max_bytes // 4)
        done = len(urls)
        if done == len(lines):
            return Done(done, done, 0, [_joined(urls, fmt.sep)], [], [])
        rest = self._plain(lines[done:], first + done, fmt)
        head = _joined(urls, fmt.sep) + rest.pieces[0]
        return rest._replace(
            lines=done + rest.lines, valid=done + rest.valid, pieces=[head, *rest.pieces[1:]]
        )

    def _problem(self, line: str, text: str) -> str | None:
        """Why a line cannot be canonicalized, or None."""
        # A character takes at most 4 bytes in UTF-8, 1 when it stands for a raw byte.
        if len(line) * 4 > self.max_bytes and _size(line) > self.max_bytes:
            return f"longer than {self.max_bytes} bytes"
        if not text:
            return "empty"
        if not text.isascii():
            return _not_utf8(text)
        return None

    def _canon(self, line: str) -> tuple[str, Result | None, str | None]:
        """The line's text and its result, or the reason it is bad."""
        text = line.strip(_BLANKS)
        problem = self._problem(line, text)
        if problem is not None:
            return ("" if problem.startswith("longer") else text), None, problem
        try:
            r = canonicalize(text, self.policy, form=self.form)
        except InvalidTarget as e:
            return text, None, f"rejected: {e}"
        except Exception as e:  # a bug in urlsan must not stop a ten-million-line run
            return text, None, f"internal error, please report: {type(e).__name__}: {e}"
        protected = backends.for_host(self.backends, backends.url_authority(r.url))
        if protected:
            found = backends.divergences(backends.origin_form(r.url), protected)
            r = r._replace(findings=r.findings + backends.findings(found))
        return text, r, None

    def _plain(self, lines: list[str], first: int, fmt: Format) -> Done:
        """Any mode but --dedupe: the output, cut before each bad line."""
        out: list[str] = []
        pieces: list[bytes] = []
        bad: list[tuple[int, str]] = []
        valid = changed = 0
        for number, line in enumerate(lines, first):
            text, r, problem = self._canon(line)
            if r is not None:
                valid += 1
                changed += fmt.changes and fmt.counts(text, r)
                out.append(fmt.line(number, text, r))
                continue
            pieces.append(_encode(out))
            out = []
            bad.append((number, problem or ""))
            if self.on_error is OnError.FAIL:
                return Done(number - first + 1, valid, changed, [*pieces, b""], bad, [])
            through = fmt.bad(number, text, problem or "")
            if through is not None and self.on_error is OnError.PASS:
                out.append(through)
        pieces.append(_encode(out))
        return Done(len(lines), valid, changed, pieces, bad, [])

    def _keyed(self, lines: list[str], first: int, fmt: Format) -> Done:
        """--dedupe: an entry per line, for the main process, which knows what came before."""
        entries: list[Entry] = []
        valid = changed = 0
        checking = self.mode in (Mode.CHECK, Mode.CHECK_JSON, Mode.CHECK_DIFF)
        for number, line in enumerate(lines, first):
            text, r, problem = self._canon(line)
            if r is None:
                reason = problem or ""
                through = fmt.bad(number, text, reason)
                if through is None or self.on_error is not OnError.PASS:
                    through = ""
                entries.append(
                    Entry(number, None, through.encode("utf-8", "surrogateescape"), reason, False)
                )
                if self.on_error is OnError.FAIL:
                    break
                continue
            valid += 1
            is_changed = fmt.counts(text, r)
            changed += is_changed
            dup = text  # shown() by the main process, for the few that are duplicates
            if checking and self.mode is Mode.CHECK_JSON:
                dup = json.dumps({"line": number, **r.as_dict()}, ensure_ascii=False)
            entries.append(
                Entry(
                    number,
                    digest(r.url),
                    fmt.line(number, text, r).encode("utf-8", "surrogateescape"),
                    dup,
                    is_changed,
                )
            )
        return Done(len(entries), valid, changed, [], [], entries)


def _joined(urls: list[str], sep: str) -> bytes:
    return (sep.join(urls) + sep).encode() if urls else b""


def _encode(parts: list[str]) -> bytes:
    return "".join(parts).encode("utf-8", "surrogateescape")


def _size(line: str) -> int:
    return len(line.encode("utf-8", "surrogateescape"))


def _not_utf8(text: str) -> str | None:
    """Why ``text`` (decoded with surrogateescape) was not UTF-8, or None when it was."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        offset = _size(text[: e.start])
        return f"not UTF-8 (byte {ord(text[e.start]) - 0xDC00:#04x} at offset {offset})"
    return None


def digest(url: str) -> bytes:
    """The dedupe key: 16 bytes whatever the URL's length (collisions: ~2⁻⁶⁴ at 2³² URLs)."""
    key: bytes = _blake2b()(url.encode("utf-8", "surrogateescape"), digest_size=16).digest()
    return key


@functools.cache
def _blake2b() -> Any:
    # Imported for --dedupe only: hashlib loads OpenSSL, 3.5 ms of every run's start-up.
    from hashlib import blake2b

    return blake2b
