"""The batch engine of `urlsan canon`: read input in blocks of whole lines, canonicalize and format
each block (in this process or in worker processes), and hand the results back in input order.

Memory stays flat however long the input is: a block is at most `BLOCK_BYTES` of whole lines
(`POOL_BLOCK_BYTES` once workers run; a line longer than the limit is cut down to
``max_bytes + 1`` bytes, which makes it a bad line, and the rest of it is skipped unread into
memory), and with ``--jobs N`` at most ``2 * N + 2`` blocks are in flight.  Only ``--dedupe``
grows, by one 16-byte digest per distinct canonical URL.

Blocks cross the process border as bytes and come back as formatted output bytes, so the main
process only reads, dispatches and writes: the per-line work (splitting, decoding,
canonicalization, formatting) is all in `Processor`, wherever it runs.  Each worker has a pipe
of its own and one block at a time (`_Pool`).  From a regular file, workers read their blocks
themselves (`file_spans`): the main process sends where a block is, not its bytes.

A block ends early when the input pauses (nothing more can be read without blocking): its lines
are written out at once, so ``tail -f log | urlsan canon`` shows each line as it comes, while
a file or a busy pipe is still read in large blocks.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import io
import json
import os
import select
import signal
import stat
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from enum import Enum
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast

if TYPE_CHECKING:  # multiprocessing itself only with --jobs: it is a tenth of the start-up
    from multiprocessing.connection import Connection

from ..core import InvalidTarget, Policy, Result, canonicalize, many

# Longer lines are bad lines.  Servers refuse far less (nginx 8 KiB, Apache 8 KiB, IIS 16 KiB);
# browsers send up to 2 MB.  64 KiB keeps every real URL and bounds the memory one line may take.
MAX_LINE_BYTES = 64 * 1024
# About 2,000 real URLs: a block's output is written as soon as it is done, and the
# measurement that decides whether workers pay (`_workers_pay`) is taken over a few of them.
BLOCK_BYTES = 128 * 1024
# Once workers run: larger blocks, fewer trips between processes and fewer wake-ups of this
# one, yet small enough that the last block, which one worker does while the other waits,
# costs little of the wall time; 2 * N + 2 of them in flight take a few MiB.
POOL_BLOCK_BYTES = 512 * 1024
# Linux: fork.  A forked worker has the imports already (a spawned one re-imports for 0.2 s
# of CPU), and the command runs no thread to fork.  Elsewhere spawn, the platform default.
_START_METHOD = "fork" if sys.platform == "linux" else "spawn"
# --jobs: when workers start.  A line must take at least POOL_MIN_LINE_SECONDS: below it,
# sending the line to a worker and its output back costs this process about as much as
# canonicalizing it (bench/cli.py: clean real URLs take 0.9 µs a line here, in the first
# blocks, and `-j 2` was slower on them than `-j 1`; dirty ones take 2.5 µs).  A file: after
# POOL_SAMPLE_SECONDS of work here, when what is left should take POOL_MIN_WORK_SECONDS or
# more (a fork costs milliseconds; a spawned worker's imports, 0.2 s of CPU, pay back only on
# work several times as long).
# A pipe, of unknown length: after POOL_AFTER_SECONDS of work here.
# From a regular file, which workers read themselves (`file_spans`), this process only writes
# their output, and lines over POOL_MIN_SPAN_LINE_SECONDS pay: on the clean lines, `-j 2` is
# then 1.23x as fast as `-j 1` at 600,000 lines (bench/cli.py --scaling).
# A regular file of POOL_START_BYTES or more, which workers read in spans, pays for them
# whatever its lines, and they start at once, without the sample: the cheapest lines, clean
# real URLs, take about 8 ns a byte here (65 ms for 8 MiB, 33 of which the second core saves),
# and starting two workers costs about 16 ms.  On 600,000 dirty lines (36 MB) the sample left
# one core idle for 35 ms: `-j 2` went from 1.50x to 1.58x `-j 1` (bench/cli.py --scaling).
POOL_START_BYTES = 8 * 1024 * 1024
POOL_MIN_LINE_SECONDS = 1.2e-6
POOL_MIN_SPAN_LINE_SECONDS = 0.5e-6
POOL_SAMPLE_SECONDS = 0.02
POOL_MIN_WORK_SECONDS = 0.25 if _START_METHOD == "fork" else 1.5
POOL_AFTER_SECONDS = 0.2
_GZIP_MAGIC = b"\x1f\x8b"
_BLANKS = many.BLANKS


class Mode(Enum):
    """What is written for each line."""

    URL = "url"  # the canonical URL
    JSON = "json"  # Result.as_dict()
    DIFF = "diff"  # changed URLs: line number and rules, before and after
    CHECK = "check"  # offenders as FILE:LINE: rules: input -> canonical
    CHECK_JSON = "check-json"  # offenders as Result.as_dict() with their "line"
    CHECK_DIFF = "check-diff"  # offenders in the --diff form


class OnError(Enum):
    """What becomes of a bad line (it is reported on stderr whatever this says)."""

    PASS = "pass"  # written unchanged
    SKIP = "skip"  # left out
    FAIL = "fail"  # the run stops before it


@dataclass(frozen=True, slots=True)
class Block:
    """Whole input lines: ``data`` (each line ends with the separator), or the command-line
    arguments as ``texts``, or the lines of a file that start in a ``span`` of it (``fd,
    start, end``), which the worker reads itself; ``first`` is the number of the first line,
    0 when it is not known yet (the lines are numbered when the result comes back).
    ``pause``: the input had nothing more to give at once, so everything up to here is to be
    written out now."""

    data: bytes
    first: int
    pause: bool = False
    texts: tuple[str, ...] | None = None
    span: tuple[int, int, int] | None = None


class Entry(NamedTuple):
    """One line under ``--dedupe``: its canonical form's digest (None for a bad line), its
    output, what a duplicate report shows of it (its text, its JSON offender with
    ``--check --json``, the reason for a bad line), and whether canonicalization changed it."""

    number: int
    key: bytes | None
    out: bytes
    shown: str
    changed: bool


class Done(NamedTuple):
    """A processed block.  Without ``--dedupe``: the output cut before each bad line
    (``len(bad) + 1`` pieces), so that a report on stderr lands between the lines around it.
    With ``--dedupe``: ``entries``, one per line, and no pieces."""

    lines: int  # lines handled: all of the block's, or those before the bad one (--on-error fail)
    valid: int
    changed: int
    pieces: list[bytes]
    bad: list[tuple[int, str]]
    entries: list[Entry]


class Colors:
    """ANSI colors for --diff, or empty strings."""

    def __init__(self, on: bool) -> None:
        self.head = "\x1b[1;36m" if on else ""
        self.minus = "\x1b[31m" if on else ""
        self.plus = "\x1b[32m" if on else ""
        self.reset = "\x1b[0m" if on else ""


# C0 and C1 controls and DEL, shown as \xNN: a URL in a list must not be able to drive the
# terminal it is displayed on (ESC sequences can rewrite the screen or the title).
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}


def shown(text: str) -> str:
    """``text`` safe for a terminal."""
    # isprintable() is false for every control (and a few more): the common case costs a scan.
    return text if text.isprintable() else text.translate(_CONTROLS)


def rules_of(r: Result) -> str:
    return ", ".join(dict.fromkeys(e.rule for e in r.edits))


# One small formatter per output mode.  `line` returns the output of a valid line ('' for
# none), `bad` that of a bad line written through (--on-error pass).
class _Urls:
    changes = False  # whether the mode needs to know if a line changed

    def __init__(self, sep: str, name: str, colors: Colors) -> None:
        self.sep, self.name, self.colors = sep, name, colors

    def line(self, number: int, text: str, r: Result) -> str:
        return r.url + self.sep

    def bad(self, number: int, text: str, reason: str) -> str | None:
        return text + self.sep


class _Json(_Urls):
    def line(self, number: int, text: str, r: Result) -> str:
        return json.dumps(r.as_dict(), ensure_ascii=False) + self.sep

    def bad(self, number: int, text: str, reason: str) -> str | None:
        shown_input = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        obj: dict[str, Any] = {
            "input": shown_input,
            "url": None,
            "edits": [],
            "findings": [],
            "error": reason,
        }
        return json.dumps(obj, ensure_ascii=False) + self.sep


class _Diff(_Urls):
    changes = True

    def line(self, number: int, text: str, r: Result) -> str:
        if r.url == text:
            return ""
        c = self.colors
        return (
            f"{c.head}{number}: {rules_of(r)}{c.reset}\n"
            f"{c.minus}- {shown(text)}{c.reset}\n"
            f"{c.plus}+ {shown(r.url)}{c.reset}\n"
        )

    def bad(self, number: int, text: str, reason: str) -> str | None:
        return None  # --diff and --check never print bad lines on stdout


class _Check(_Diff):
    def line(self, number: int, text: str, r: Result) -> str:
        if r.url == text:
            return ""
        return f"{self.name}:{number}: {rules_of(r)}: {shown(text)} -> {shown(r.url)}\n"


class _CheckJson(_Diff):
    def line(self, number: int, text: str, r: Result) -> str:
        if r.url == text:
            return ""
        return json.dumps({"line": number, **r.as_dict()}, ensure_ascii=False) + "\n"


_FORMATS: dict[Mode, type[_Urls]] = {
    Mode.URL: _Urls,
    Mode.JSON: _Json,
    Mode.DIFF: _Diff,
    Mode.CHECK: _Check,
    Mode.CHECK_JSON: _CheckJson,
    Mode.CHECK_DIFF: _Diff,
}


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

    def __call__(self, block: Block) -> Done:
        lines, utf8 = self._texts(block)
        fmt = _FORMATS[self.mode](self.sep.decode(), self.name, Colors(self.colors))
        if self.dedupe:
            return self._keyed(lines, block.first, fmt)
        if self.mode is Mode.URL and utf8:
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

    def _urls(self, lines: list[str], first: int, fmt: _Urls) -> Done:
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
            return text, canonicalize(text, self.policy, form=self.form), None
        except InvalidTarget as e:
            return text, None, f"rejected: {e}"
        except Exception as e:  # a bug in urlsan must not stop a ten-million-line run
            return text, None, f"internal error, please report: {type(e).__name__}: {e}"

    def _plain(self, lines: list[str], first: int, fmt: _Urls) -> Done:
        """Any mode but --dedupe: the output, cut before each bad line."""
        out: list[str] = []
        pieces: list[bytes] = []
        bad: list[tuple[int, str]] = []
        valid = changed = 0
        for number, line in enumerate(lines, first):
            text, r, problem = self._canon(line)
            if r is not None:
                valid += 1
                changed += fmt.changes and r.url != text
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

    def _keyed(self, lines: list[str], first: int, fmt: _Urls) -> Done:
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
            is_changed = r.url != text
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


# --- input -----------------------------------------------------------------------------------


def open_input(path: str) -> IO[bytes]:
    """A binary stream of ``path`` (``-``: standard input), gunzipped when it starts like gzip."""
    raw: Any = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        from ..audit.sources import GzipInput  # here: plain input starts without audit's imports

        return cast(IO[bytes], GzipInput(buffered))
    return cast(IO[bytes], buffered)


def open_output(path: str) -> IO[bytes]:
    """A binary stream to ``path`` (``-``: standard output), gzipped when the name ends in .gz."""
    if path == "-":
        return sys.stdout.buffer
    if path.endswith(".gz"):
        gz: Any = gzip.open(path, "wb", compresslevel=6)  # noqa: SIM115
        return cast(IO[bytes], gz)
    return open(path, "wb", buffering=1 << 16)


def _more_at_once(stream: IO[bytes]) -> Callable[[], bool]:
    """A test of whether ``stream`` can give more input without blocking (always yes when that
    cannot be asked, as for a file in memory)."""
    base: Any = stream.fileobj if isinstance(stream, gzip.GzipFile) else stream
    try:
        poller = select.poll()
        poller.register(base.fileno(), select.POLLIN)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return lambda: True
    return lambda: bool(poller.poll(0))


class BlockReader:
    """The blocks of a stream of ``sep``-separated lines, numbered from 1.

    Each read takes what the stream has at once (`read1`), up to `BLOCK_BYTES`; a block is
    handed on when it is full, at the end, or when the input pauses.  With ``per_line`` every
    line is a block of its own (``--line-buffered``).  The last line needs no separator.
    """

    def __init__(
        self,
        stream: IO[bytes],
        sep: bytes = b"\n",
        max_bytes: int = MAX_LINE_BYTES,
        size: int = BLOCK_BYTES,
        per_line: bool = False,
    ) -> None:
        self.stream, self.sep, self.max_bytes = stream, sep, max_bytes
        self.size, self.per_line = size, per_line
        self.number = 1  # of the next line to hand on
        self.parts: list[bytes | memoryview] = []  # whole lines not handed on yet
        self.held = b""  # the start of a line whose end has not been read
        self.skipping = False  # in the middle of a line too long to keep
        self.numbered = True  # False: blocks say first=0, numbered when their results are back

    def __iter__(self) -> Iterator[Block]:
        read: Callable[[int], bytes] = getattr(self.stream, "read1", self.stream.read)
        more = _more_at_once(self.stream)
        while data := read(self.size):
            self._take(data)
            pause = len(data) < self.size and not more()
            if pause or self.per_line or sum(map(len, self.parts)) >= self.size:
                yield from self._hand_on(pause=True if self.per_line else pause)
        if self.held:
            self.parts.append(self.held + self.sep)
            self.held = b""
        yield from self._hand_on(pause=True)

    def _take(self, data: bytes) -> None:
        if self.skipping:  # the rest of a too-long line: dropped, never held
            cut = data.find(self.sep)
            if cut < 0:
                return
            data, self.skipping = data[cut + 1 :], False
        end = data.rfind(self.sep)
        if end >= 0:
            # Joined once, in _hand_on: a slice and a concatenation here would copy it twice.
            if self.held:
                self.parts.append(self.held)
            self.parts.append(data if end + 1 == len(data) else memoryview(data)[: end + 1])
            self.held = data[end + 1 :]
        else:
            self.held += data
        if len(self.held) > self.max_bytes:
            # Kept as max_bytes + 1 bytes: enough for the processor to call it too long.
            self.parts.append(self.held[: self.max_bytes + 1] + self.sep)
            self.held, self.skipping = b"", True

    def _hand_on(self, pause: bool) -> Iterator[Block]:
        if not self.parts:
            return
        data = b"".join(self.parts)
        self.parts = []
        if not self.per_line:
            if not self.numbered:
                yield Block(data, 0, pause)
                return
            yield Block(data, self.number, pause)
            self.number += data.count(self.sep)
            return
        for line in data.split(self.sep)[:-1]:
            yield Block(line + self.sep, self.number, True)
            self.number += 1


# --- spans of a file: what workers read themselves ------------------------------------------
# Once workers run on a regular file, the main process no longer reads it: each worker reads
# the lines that start in its span with os.pread (which moves no shared file offset).  Copying
# every block through this process (a read, the line count, a write into a pipe) was about
# half of its work: on 2 cores, CPU taken from the workers (bench/cli.py --scaling).
_SPAN_READ = 64 * 1024  # bytes read at a time past a span's end, to finish its last line
_MIN_SPAN = 64 * 1024  # about 1,000 lines: the smallest span worth a trip to a worker


def file_spans(reader: BlockReader) -> Iterator[Block] | None:
    """The rest of ``reader``'s input as spans of up to `POOL_BLOCK_BYTES`, then (if the file grew
    meanwhile) as blocks read from where the spans ended; None when the input is not a plain
    file that can be read that way (a pipe, gzip, the middle of an over-long line)."""
    fd = _regular_file(reader.stream)
    if fd is None or reader.per_line or reader.skipping or reader.parts:
        return None
    try:
        start = reader.stream.tell() - len(reader.held)
    except (OSError, ValueError):
        return None
    return _spans(reader, fd, start) if start > 0 else None


def _regular_file(stream: IO[bytes]) -> int | None:
    """The descriptor of the regular file ``stream`` reads as it is (not gzip), or None."""
    # Exactly a buffered file: a reader over a GzipFile has the compressed file's fileno() too.
    if type(stream) is not io.BufferedReader or not isinstance(stream.raw, io.FileIO):
        return None
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, ValueError):
        return None


def _spans(reader: BlockReader, fd: int, start: int) -> Iterator[Block]:
    size = os.fstat(fd).st_size
    while start < size:
        # Smaller near the end (a quarter of what is left), so that the workers finish at
        # about the same time: the last span is one worker's alone.
        end = min(start + min(POOL_BLOCK_BYTES, max((size - start) // 4, _MIN_SPAN)), size)
        yield Block(b"", 0, span=(fd, start, end))
        reader.stream.seek(end)  # for the progress report: how far the input has gone
        start = end
    # Lines written to the file while the spans were read: read on, as one process would.
    reader.stream.seek(line_start(fd, start, reader.sep))
    rest = BlockReader(reader.stream, reader.sep, reader.max_bytes, POOL_BLOCK_BYTES)
    rest.numbered = False
    yield from rest


def line_start(fd: int, offset: int, sep: bytes) -> int:
    """Where the first line that starts at or after ``offset`` starts (the end of the file
    when none does)."""
    at = offset - 1
    while chunk := os.pread(fd, _SPAN_READ, at):
        cut = chunk.find(sep)
        if cut >= 0:
            return at + cut + 1
        at += len(chunk)
    return max(at, offset)


def read_span(fd: int, start: int, end: int, sep: bytes, max_bytes: int) -> bytes:
    """The lines of file ``fd`` that start in ``[start, end)``, each ending with ``sep``: the
    last one read on past ``end`` to its end, a line too long kept as ``max_bytes + 1`` bytes
    (as `BlockReader` keeps it)."""
    head = os.pread(fd, end - start + 1, start - 1)
    cut = head.find(sep)  # the line before ends here (at 0 when the span starts a line)
    if cut < 0 or cut == len(head) - 1:
        return b""  # the line that covers the span starts before it
    data = [head[cut + 1 :]]
    last = len(data[0]) - data[0].rfind(sep) - 1  # bytes of the last line read so far
    at = start - 1 + len(head)
    while last and last <= max_bytes and (chunk := os.pread(fd, _SPAN_READ, at)):
        cut = chunk.find(sep)
        data.append(chunk if cut < 0 else chunk[: cut + 1])
        last = 0 if cut >= 0 else last + len(chunk)
        at += len(chunk)
    joined = b"".join(data)
    if last > max_bytes:  # cut as BlockReader cuts it: enough to call it too long
        joined = joined[: len(joined) - last + max_bytes + 1]
    return joined if joined.endswith(sep) else joined + sep


def arguments_block(urls: Iterable[str]) -> Block:
    """Command-line arguments as one block of lines (argument 1, 2, …)."""
    return Block(b"", 1, True, tuple(urls))


# --- worker processes ------------------------------------------------------------------------


class WorkerDied(Exception):
    """A ``--jobs`` worker process died (killed, out of memory): the output is incomplete."""


def run_blocks(
    blocks: Iterable[Block],
    processor: Processor,
    jobs: int = 1,
    read_share: Callable[[], float] | None = None,
) -> Iterator[tuple[Block, Done]]:
    """Each block with its result, in input order.

    With ``jobs > 1`` the blocks go to that many worker processes once `_workers_pay` says so
    (a `BlockReader` then reads `POOL_BLOCK_BYTES` at a time), or from the first block on when
    they will read a large file themselves (`POOL_START_BYTES`).  ``read_share`` tells how much
    of the input has been read (0 to 1), when that is known.  A dead worker raises
    `WorkerDied` here, as soon as its pipe closes.
    """
    reader = blocks if isinstance(blocks, BlockReader) else None
    spannable = jobs > 1 and reader is not None and _spannable(reader, processor)
    at_once = spannable and _large_file(cast(BlockReader, reader))
    if reader is not None and not reader.per_line:
        # Blocks processed here are numbered from the lines their processing counts: the
        # reader's own count was a second pass over every byte (a twentieth of a clean run).
        reader.numbered = False
    blocks = iter(blocks)
    spent, lines, number = 0.0, 0, 1
    for block in blocks:
        if block.first == 0:
            block = replace(block, first=number)
        if at_once or (jobs > 1 and _workers_pay(spent, lines, read_share, spannable)):
            if reader is not None and not reader.per_line:
                reader.numbered, reader.number = True, number + block.data.count(reader.sep)
                reader.size = max(reader.size, POOL_BLOCK_BYTES)
                blocks = (spannable and file_spans(reader)) or blocks
            yield from _numbered(_pooled(block, blocks, processor, jobs), number)
            return
        start = time.process_time()
        done = processor(block)
        spent += time.process_time() - start
        lines += done.lines
        number = block.first + done.lines
        yield block, done


def _large_file(reader: BlockReader) -> bool:
    """Whether ``reader`` reads a regular file of `POOL_START_BYTES` or more."""
    fd = _regular_file(reader.stream)
    return fd is not None and os.fstat(fd).st_size >= POOL_START_BYTES


def _spannable(reader: BlockReader, processor: Processor) -> bool:
    """Whether workers may read ``reader``'s file in spans: a regular file, which a forked
    worker has open, and an output that shows no line numbers (those of a span are known only
    once the spans before it are done)."""
    plain = processor.mode in (Mode.URL, Mode.JSON) and not processor.dedupe
    fork = _START_METHOD == "fork"
    return plain and fork and not reader.per_line and _regular_file(reader.stream) is not None


def _numbered(
    results: Iterator[tuple[Block, Done]], number: int = 1
) -> Iterator[tuple[Block, Done]]:
    """``results`` with the lines of each block numbered (`Block.first`), where they were not;
    ``number`` is the first block's first line."""
    for block, done in results:
        if block.first == 0:
            block = replace(block, first=number)
            done = done._replace(bad=[(line + number, reason) for line, reason in done.bad])
        number = block.first + done.lines
        yield block, done


def _workers_pay(
    spent: float, lines: int, read_share: Callable[[], float] | None, spans: bool = False
) -> bool:
    """Whether to start workers, after ``spent`` seconds of CPU on ``lines`` lines here.

    Never when a line costs less than `POOL_MIN_LINE_SECONDS` (then sending it to a worker and
    its output back costs about as much as canonicalizing it), or `POOL_MIN_SPAN_LINE_SECONDS`
    when workers will read the file themselves (``spans``).  When the input's size is known,
    after a sample of `POOL_SAMPLE_SECONDS`, and only if the rest of it should take
    `POOL_MIN_WORK_SECONDS` or more: what is left must pay for the workers' start-up.  When it
    is not known (a pipe), after `POOL_AFTER_SECONDS`: a short input is not worth starting
    processes for.
    """
    least = POOL_MIN_SPAN_LINE_SECONDS if spans else POOL_MIN_LINE_SECONDS
    if not lines or spent < lines * least:
        return False
    share = _share(read_share)
    if share is None:
        return spent >= POOL_AFTER_SECONDS
    return spent >= POOL_SAMPLE_SECONDS and spent * (1 - share) / share >= POOL_MIN_WORK_SECONDS


def _share(read_share: Callable[[], float] | None) -> float | None:
    """How much of the input has been read, when that is known and not nothing."""
    if read_share is None:
        return None
    try:
        share = read_share()
    except (OSError, ValueError):
        return None
    return share if share > 0 else None


def _pooled(
    first: Block, blocks: Iterator[Block], processor: Processor, jobs: int
) -> Iterator[tuple[Block, Done]]:
    try:
        pool = _Pool(processor, jobs)
    except OSError as e:  # EAGAIN: the user's process limit; ENOMEM
        # A documented repair, not a traceback: the run goes on here, as with --jobs 1 (a span
        # is read here as a worker would read it).
        print(f"urlsan: cannot start worker processes ({e.strerror}): going on in one process",
              file=sys.stderr)  # fmt: skip
        for block in _chain(first, blocks):
            yield block, processor(block)
        return
    finished = False
    try:
        yield from pool.run(_chain(first, blocks), limit=2 * jobs + 2)
        finished = True
    finally:
        pool.close(kill=not finished)


class _Task:
    """A block sent to a worker, and its result once back."""

    __slots__ = ("block", "done")

    def __init__(self, block: Block) -> None:
        self.block = block
        self.done: Done | None = None


class _Pool:
    """Worker processes, each with a pipe of its own and one block at a time.

    No executor: the main thread sends each block to an idle worker, reads results as they
    come (`_ready`'s poll, or multiprocessing's wait for spawned workers) and hands them on in
    input order.  No thread of its own, so none is forked, and no hop through a queue's feeder
    or manager thread: once
    workers ran on 600,000 dirty lines, the main process spent 0.20 s of CPU behind
    `ProcessPoolExecutor`, 0.10 s here (bench/cli.py's input, best of 5).  A worker that dies
    closes its end of its pipe: the next read or write on it fails at once.
    """

    def __init__(self, processor: Processor, jobs: int) -> None:
        _keep_freed_memory()  # before the forks: the workers inherit it
        self.pipes: list[Connection | _Channel] = []
        self.processes: list[_Forked | Any] = []  # Any: a multiprocessing Process (spawn)
        self.idle: list[int] = []
        self.busy: dict[int, _Task] = {}
        fork = _START_METHOD == "fork"
        start = _fork if fork else _spawn
        self._wait: Callable[[list[Any]], list[Any]] = _ready if fork else _spawned_wait()
        try:
            for index in range(jobs):
                pipe, process = start(processor, self.pipes)
                self.pipes.append(pipe)
                self.processes.append(process)
                self.idle.append(index)
        except OSError:
            self.close(kill=True)  # those started before the one that could not be
            raise

    def run(self, blocks: Iterable[Block], limit: int) -> Iterator[tuple[Block, Done]]:
        """Each block with its result, in input order, at most ``limit`` blocks in flight.

        A block goes out as soon as a worker is free, before the results before it are
        written; after a block that ends at a pause of the input, nothing more is read until
        all is written (``tail -f``: a line never waits for input that may not come)."""
        window: deque[_Task] = deque()
        for block in blocks:
            while not self.idle or len(window) >= limit:
                if window[0].done is None:
                    self._receive()
                else:
                    yield from _finished(window)
            self._send(block, window)
            yield from _finished(window)
            if block.pause:
                yield from self._drain(window)
        yield from self._drain(window)

    def _drain(self, window: deque[_Task]) -> Iterator[tuple[Block, Done]]:
        while window:
            if window[0].done is None:
                self._receive()
            yield from _finished(window)

    def _send(self, block: Block, window: deque[_Task]) -> None:
        index = self.idle.pop()
        task = _Task(block)
        try:
            _send_block(self.pipes[index], block)
        except OSError:  # its end is closed: it died
            raise WorkerDied from None
        self.busy[index] = task
        window.append(task)

    def _receive(self) -> None:
        """Wait for a result or more; each worker that sent one is idle again."""
        pipes: dict[Any, int] = {self.pipes[index]: index for index in self.busy}
        for pipe in self._wait(list(pipes)):
            index = pipes[pipe]
            try:
                result = _receive_done(pipe)
            except (EOFError, OSError):  # its end closed, before or in the middle of a result
                raise WorkerDied from None
            if isinstance(result, BaseException):  # a bug in urlsan, raised here with its type
                raise result
            self.busy.pop(index).done = result
            self.idle.append(index)

    def close(self, kill: bool) -> None:
        """End the workers: each ends when its pipe closes; ``kill`` ends them in the middle
        of a block (an error, ^C, or the run stopped at a bad line)."""
        for pipe in self.pipes:
            pipe.close()
        for process in self.processes:
            if kill:
                process.kill()
            process.join()


# --- starting workers -------------------------------------------------------------------------
# Linux: os.fork and two pipes of our own (`_Channel`).  multiprocessing's Pipe, Process and
# wait would do the same, but importing them costs 12 ms, in the part of the run one core does
# alone before the workers start.  Elsewhere, spawned multiprocessing processes.


def _fork(processor: Processor, others: list[Any]) -> tuple[_Channel, _Forked]:
    """A forked worker, and this process's end of its pipes."""
    to_worker, from_worker = _pipe(), _pipe()
    # Out of the collector's sight, in both processes: a worker's full collection would write
    # to every object made so far, so copy each page of them (copy-on-write), 20 ms of CPU a
    # run on 600,000 dirty lines.
    gc.freeze()
    try:
        pid = os.fork()
    except OSError:
        for fd in (*to_worker, *from_worker):
            os.close(fd)
        raise
    if pid == 0:  # the worker: never back into the caller's frames, never its atexit
        status = 1
        try:
            # Copies of this process's ends, its own among them: closed, so that each pipe
            # has one end here and one in its worker (closing or dying here ends its read).
            os.close(to_worker[1])
            os.close(from_worker[0])
            for other in others:
                other.close()
            _serve(_Channel(to_worker[0], from_worker[1]), processor)
            status = 0
        finally:
            os._exit(status)
    os.close(to_worker[0])
    os.close(from_worker[1])
    return _Channel(from_worker[0], to_worker[1]), _Forked(pid)


def _pipe() -> tuple[int, int]:
    """A pipe that holds a whole block's output (1 MiB where Linux allows it, 64 KiB by
    default): one write and one read per message instead of a wake-up per 64 KiB."""
    read, write = os.pipe()
    with contextlib.suppress(OSError, AttributeError):
        import fcntl

        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 1 << 20)  # type: ignore[attr-defined]
    return read, write


class _Channel:
    """This process's ends of the two pipes it shares with one forked worker, sending what
    `multiprocessing.connection.Connection` sends: messages of a length and that many bytes."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd

    def fileno(self) -> int:
        return self.read_fd

    def send_bytes(self, data: bytes) -> None:
        self._write(_LENGTH.pack(len(data)))
        self._write(data)

    def recv_bytes(self) -> bytes:
        (length,) = _LENGTH.unpack(self._read(_LENGTH.size))
        return self._read(length)

    def send(self, value: Any) -> None:
        import pickle  # only with --jobs: 2 ms of every start-up

        self.send_bytes(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))

    def recv(self) -> Any:
        import pickle

        return pickle.loads(self.recv_bytes())

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _write(self, data: bytes) -> None:
        view, done = memoryview(data), 0
        while done < len(view):
            done += os.write(self.write_fd, view[done:])

    def _read(self, length: int) -> bytes:
        data = os.read(self.read_fd, length)  # all of it, mostly: the pipe holds a message
        if len(data) == length:
            return data
        parts = [data]
        while length := length - len(data):
            if not (data := os.read(self.read_fd, length)):
                raise EOFError  # the worker's end closed
            parts.append(data)
        return b"".join(parts)


_LENGTH = struct.Struct("!Q")


class _Forked:
    """A forked worker process, as much of multiprocessing's Process as `_Pool` uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def join(self) -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _ready(channels: list[_Channel]) -> list[_Channel]:
    """The channels with something to read (or closed at the worker's end).  poll, not
    select: select takes no descriptor over 1023, which --jobs 0 on a large machine reaches."""
    poller = select.poll()
    for channel in channels:
        poller.register(channel.read_fd, select.POLLIN)
    ready = {fd for fd, _ in poller.poll()}
    return [channel for channel in channels if channel.read_fd in ready]


def _spawn(processor: Processor, others: list[Any]) -> tuple[Connection, Any]:
    """A spawned multiprocessing worker, and this process's end of its pipe."""
    import multiprocessing

    context: Any = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(theirs, processor), daemon=True)
    process.start()
    theirs.close()
    return mine, process


def _spawned_wait() -> Callable[[list[Any]], list[Any]]:
    from multiprocessing.connection import wait

    return wait


def _keep_freed_memory() -> None:
    """Have glibc's malloc keep the memory of a freed block for the next one.

    A block of `POOL_BLOCK_BYTES` makes buffers of about that size (its text, its output).  By
    default glibc gives each back to the system when it is freed and the next block faults it
    in again: 27,000 more page faults than one process, 0.1 s of CPU on 600,000 dirty lines
    (``perf stat``, bench/cli.py's input).  Here it keeps up to 32 MiB free in each process.
    Nothing is done without glibc (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(m_mmap_threshold, 4 << 20)  # larger buffers: mmap, and unmapped when freed
    mallopt(m_trim_threshold, 32 << 20)  # free memory kept at the top of the heap


def _finished(window: deque[_Task]) -> Iterator[tuple[Block, Done]]:
    """The blocks at the head of ``window`` whose results are back, in order."""
    while window and window[0].done is not None:
        task = window.popleft()
        yield task.block, cast(Done, task.done)


def _serve(pipe: Connection | _Channel, processor: Processor) -> None:
    """A worker: a block in, its `Done` out, until the main process closes the pipe."""
    # ^C reaches the whole process group: the main process stops the run, workers just end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(EOFError, OSError):  # the main process closed the pipe, or died
        while True:
            block = _receive_block(pipe)
            try:
                result: Done | BaseException = processor(block)
            except Exception as e:  # a bug: the main process raises it
                result = e
            _send_done(pipe, result)


# The wire between the main process and a worker: the bytes of a block and of its output go as
# they are (send_bytes), the rest pickled.  Pickled, the bytes would be copied once more on
# each side, in and out: four more copies of every line.


def _send_block(pipe: Connection | _Channel, block: Block) -> None:
    pipe.send((block.first, block.pause, block.texts, block.span))
    pipe.send_bytes(block.data)


def _receive_block(pipe: Connection | _Channel) -> Block:
    first, pause, texts, span = pipe.recv()
    return Block(pipe.recv_bytes(), first, pause, texts, span)


def _send_done(pipe: Connection | _Channel, result: Done | BaseException) -> None:
    if isinstance(result, BaseException):
        pipe.send((result, 0))
        return
    pipe.send((result._replace(pieces=[]), len(result.pieces)))
    for piece in result.pieces:
        pipe.send_bytes(piece)


def _receive_done(pipe: Connection | _Channel) -> Done | BaseException:
    head, pieces = pipe.recv()
    if isinstance(head, BaseException):
        return head
    return cast(Done, head)._replace(pieces=[pipe.recv_bytes() for _ in range(pieces)])


def _chain(first: Block, rest: Iterator[Block]) -> Iterator[Block]:
    yield first
    yield from rest


# --- progress --------------------------------------------------------------------------------


class Progress:
    """A one-line progress report on a terminal, at most ten updates a second.

    It appears only after the first second: a large input is one that takes a while.
    """

    def __init__(
        self,
        stream: IO[str],
        size: int | None,
        position: Callable[[], int] | None,
        enabled: bool,
    ) -> None:
        self.stream = stream
        self.size = size
        self.position = position
        self.enabled = enabled
        self.start = time.monotonic()
        self.next = self.start + 1.0
        self.shown = False

    def update(self, lines: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + 0.1
        rate = lines / max(now - self.start, 1e-9)
        text = f"{lines:>12,} lines  {rate:>9,.0f} lines/s"
        if self.size and self.position is not None:
            try:
                done = min(self.position() / self.size, 1.0)
            except (OSError, ValueError):
                done = 0.0
            bar = "#" * int(done * 30)
            text = f"[{bar:<30}] {done:>4.0%} {text}"
        self.stream.write(f"\r{text}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def input_size(stream: IO[bytes]) -> tuple[int | None, Callable[[], int] | None]:
    """The size of the file under ``stream`` and a way to ask how far it has been read."""
    base: Any = stream
    if isinstance(base, gzip.GzipFile):
        base = base.fileobj  # progress in compressed bytes: the only size known in advance
    try:
        size = os.fstat(base.fileno()).st_size
        base.tell()
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None, None
    if size <= 0:
        return None, None
    return size, base.tell
