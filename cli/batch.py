"""The batch engine of `urlsan canon`: blocks of whole lines (`inputs.BlockReader`), each
canonicalized and formatted by a `processor.Processor` in this process or, once they pay, in
``--jobs`` worker processes (`workers.Pool`), and handed back in input order.

Memory stays flat however long the input is: a block is at most `inputs.BLOCK_BYTES` of whole
lines (`POOL_BLOCK_BYTES` once workers run; a line longer than the limit is cut down to
``max_bytes + 1`` bytes, which makes it a bad line, and the rest of it is skipped unread into
memory), and with ``--jobs N`` at most ``2 * N + 2`` blocks are in flight.  Only ``--dedupe``
grows, by one 16-byte digest per distinct canonical URL.

From a regular file, workers read their blocks themselves (`spans.file_spans`): the main
process sends where a block is, not its bytes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import cast

from .blocks import Block, Done, Work
from .inputs import BlockReader
from .spans import file_spans, regular_file

# Linux: fork.  A forked worker has the imports already (a spawned one re-imports for 0.2 s
# of CPU), and the command runs no thread to fork.  Elsewhere spawn, the platform default.
START_METHOD = "fork" if sys.platform == "linux" else "spawn"

# Once workers run: larger blocks, fewer trips between processes and fewer wake-ups of this
# one, yet small enough that the last block, which one worker does while the other waits,
# costs little of the wall time; 2 * N + 2 of them in flight take a few MiB.
POOL_BLOCK_BYTES = 512 * 1024
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
POOL_MIN_WORK_SECONDS = 0.25 if START_METHOD == "fork" else 1.5
POOL_AFTER_SECONDS = 0.2


def run_blocks(
    blocks: Iterable[Block],
    processor: Work,
    jobs: int = 1,
    read_share: Callable[[], float] | None = None,
) -> Iterator[tuple[Block, Done]]:
    """Each block with its result, in input order.

    With ``jobs > 1`` the blocks go to that many worker processes once `_workers_pay` says so
    (a `BlockReader` then reads `POOL_BLOCK_BYTES` at a time), or from the first block on when
    they will read a large file themselves (`POOL_START_BYTES`).  ``read_share`` tells how much
    of the input has been read (0 to 1), when that is known.  A dead worker raises
    `workers.WorkerDied` here, as soon as its pipe closes.
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
                blocks = (spannable and file_spans(reader, POOL_BLOCK_BYTES)) or blocks
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
    fd = regular_file(reader.stream)
    return fd is not None and os.fstat(fd).st_size >= POOL_START_BYTES


def _spannable(reader: BlockReader, processor: Work) -> bool:
    """Whether workers may read ``reader``'s file in spans: a regular file, which a forked
    worker has open, and an output that shows no line numbers (those of a span are known only
    once the spans before it are done)."""
    plain = not processor.numbers_lines
    fork = START_METHOD == "fork"
    return plain and fork and not reader.per_line and regular_file(reader.stream) is not None


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
    first: Block, blocks: Iterator[Block], processor: Work, jobs: int
) -> Iterator[tuple[Block, Done]]:
    try:
        # Imported once workers start: a run in one process goes without their imports.
        from .workers import Pool

        pool = Pool(processor, jobs, fork=START_METHOD == "fork")
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


def _chain(first: Block, rest: Iterator[Block]) -> Iterator[Block]:
    yield first
    yield from rest
