"""Streaming plumbing for `urlsan canon`: read lines, canonicalize them in chunks, keep the order.

Memory stays flat however long the input is: lines are read with a length cap (an absurdly long
line is skipped over in bounded pieces, never held whole), handled in chunks of `CHUNK_LINES`,
and with ``--jobs N`` at most ``2 * N + 2`` chunks are in flight at once.  (`Pool.imap` alone
would not do: its feeder thread reads the whole input ahead of the workers.)  Only ``--dedupe``
grows, by one 16-byte digest per distinct canonical URL.
"""

from __future__ import annotations

import gzip
import io
import json
import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from hashlib import blake2b
from typing import IO, Any, NamedTuple, cast

from ..core import InvalidTarget, Policy, canonicalize

# Longer lines are bad lines.  Servers refuse far less (nginx 8 KiB, Apache 8 KiB, IIS 16 KiB);
# browsers send up to 2 MB.  64 KiB keeps every real URL and bounds the memory one line may take.
MAX_LINE_BYTES = 64 * 1024
CHUNK_LINES = 2048
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_STRIP = b" \t\r\n\x0b\x0c"


class Detail(Enum):
    """How much of each `Result` the output needs: the less, the less crosses process borders."""

    URL = "url"  # the canonical URL only
    RULES = "rules"  # and the names of the rules that fired (--diff, --check)
    JSON = "json"  # the whole result, serialized in the worker


class Line(NamedTuple):
    """One input line: its number, its bytes (terminator and surrounding blanks removed) and,
    when it is usable, its text; otherwise ``error`` says why not."""

    number: int
    raw: bytes
    text: str | None
    error: str | None


# An outcome per valid line: (url, payload) or, when the policy refused the line, (None, message).
# payload: None (Detail.URL), tuple of rule names (Detail.RULES), JSON text (Detail.JSON).
Outcome = tuple[str | None, Any]


@dataclass(frozen=True, slots=True)
class Canonicalizer:
    """Canonicalizes a chunk of texts; a plain picklable value that worker processes receive."""

    policy: Policy
    detail: Detail = Detail.URL
    form: str = "auto"

    def __call__(self, texts: list[str]) -> list[Outcome]:
        policy, detail, form = self.policy, self.detail, self.form
        out: list[Outcome] = []
        append = out.append
        for text in texts:
            try:
                r = canonicalize(text, policy, form=form)
            except InvalidTarget as e:
                append((None, f"rejected: {e}"))
                continue
            except Exception as e:  # a bug in urlsan must not stop a ten-million-line run
                append((None, f"internal error, please report: {type(e).__name__}: {e}"))
                continue
            if detail is Detail.URL:
                append((r.url, None))
            elif detail is Detail.RULES:
                append((r.url, tuple(dict.fromkeys(e.rule for e in r.edits))))
            else:
                append((r.url, json.dumps(r.as_dict(), ensure_ascii=False)))
        return out


def open_input(path: str) -> IO[bytes]:
    """A binary stream of ``path`` (``-``: standard input), gunzipped when it starts like gzip."""
    raw: Any = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        gz: Any = gzip.GzipFile(fileobj=buffered, mode="rb")
        return cast(IO[bytes], gz)
    return cast(IO[bytes], buffered)


def open_output(path: str) -> IO[bytes]:
    """A binary stream to ``path`` (``-``: standard output), gzipped when the name ends in .gz."""
    if path == "-":
        return sys.stdout.buffer
    if path.endswith(".gz"):
        gz: Any = gzip.open(path, "wb", compresslevel=6)  # noqa: SIM115
        return cast(IO[bytes], gz)
    return open(path, "wb", buffering=1 << 16)


def read_lines(stream: IO[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[Line]:
    """The lines of ``stream``, numbered from 1, each classified as usable or bad.

    A line longer than ``max_bytes`` is consumed in ``max_bytes`` pieces and reported with its
    first ``max_bytes`` bytes only.  A UTF-8 byte order mark on line 1 is dropped, as are blanks
    around each line (they are never part of a URL in a list).  The last line needs no newline.
    """
    readline = stream.readline
    number = 0
    while True:
        chunk = readline(max_bytes + 1)
        if not chunk:
            return
        number += 1
        error: str | None = None
        if len(chunk) > max_bytes and not chunk.endswith(b"\n"):
            while chunk and not chunk.endswith(b"\n"):  # skip the rest of it, piece by piece
                chunk = readline(max_bytes)
            yield Line(number, b"", None, f"longer than {max_bytes} bytes")
            continue
        if number == 1 and chunk.startswith(_BOM):
            chunk = chunk[3:]
        raw = chunk.strip(_STRIP)
        if not raw:
            yield Line(number, raw, None, "empty")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            error = f"not UTF-8 (byte {raw[e.start]:#04x} at offset {e.start})"
            yield Line(number, raw, None, error)
            continue
        yield Line(number, raw, text, None)


def lines_from_args(urls: Iterable[str]) -> Iterator[Line]:
    """Command-line arguments as numbered lines (argument 1, 2, …)."""
    for number, url in enumerate(urls, 1):
        raw = os.fsencode(url)
        text = url.strip(" \t\r\n\x0b\x0c")
        if not text:
            yield Line(number, raw, None, "empty")
            continue
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            yield Line(number, raw, None, "not UTF-8")
            continue
        yield Line(number, raw.strip(_STRIP), text, None)


def chunked(lines: Iterable[Line], size: int = CHUNK_LINES) -> Iterator[list[Line]]:
    chunk: list[Line] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _texts(chunk: list[Line]) -> list[str]:
    return [line.text for line in chunk if line.text is not None]


def run_chunks(
    chunks: Iterable[list[Line]], canon: Canonicalizer, jobs: int = 1
) -> Iterator[tuple[list[Line], list[Outcome]]]:
    """Each chunk with the outcomes of its usable lines, in input order.

    With ``jobs > 1`` the chunks go to that many worker processes, but only once the input turns
    out to be longer than one chunk: a short input is not worth starting processes for.
    """
    chunks = iter(chunks)
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    if jobs <= 1 or second is None:
        yield first, canon(_texts(first))
        if second is not None:
            yield second, canon(_texts(second))
            for chunk in chunks:
                yield chunk, canon(_texts(chunk))
        return
    # "spawn" everywhere: no fork of a possibly threaded parent, and the workers receive the
    # policy the way a cluster would, pickled.
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(jobs) as pool:
        pending: deque[tuple[list[Line], Any]] = deque()
        limit = 2 * jobs + 2

        def submit(chunk: list[Line]) -> None:
            pending.append((chunk, pool.apply_async(canon, (_texts(chunk),))))

        submit(first)
        submit(second)
        for chunk in chunks:
            if len(pending) >= limit:
                done, result = pending.popleft()
                yield done, result.get()
            submit(chunk)
        while pending:
            done, result = pending.popleft()
            yield done, result.get()


def digest(url: str) -> bytes:
    """The dedupe key: 16 bytes whatever the URL's length (collisions: ~2⁻⁶⁴ at 2³² URLs)."""
    return blake2b(url.encode("utf-8", "surrogateescape"), digest_size=16).digest()


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
