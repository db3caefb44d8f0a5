"""The batch run (cli/batch.py) and its --jobs workers: order, line numbers and output as one
process gives them, when workers start, what becomes of a dead one; flat memory."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from cli_harness import URLSAN, RunUrlsan, worker_pids

from urlsan.cli import batch, workers
from urlsan.cli.batch import run_blocks
from urlsan.cli.blocks import Block, Done
from urlsan.cli.inputs import BlockReader
from urlsan.cli.processor import Processor
from urlsan.cli.status import EXIT_BAD_LINES, EXIT_WORKER_DIED
from urlsan.core import Policy, canonicalize


def test_run_blocks_numbers_lines_across_blocks() -> None:
    # One process numbers each block from the lines the blocks before it held, as the reader
    # would count them: the numbers of bad lines in late blocks tell.
    lines = [b"http://h/%d" % i if i % 97 else b"http://h/%d x" % i for i in range(1, 1001)]
    reader = BlockReader(io.BufferedReader(io.BytesIO(b"\n".join(lines) + b"\n")), size=1024)
    results = list(run_blocks(reader, Processor(Policy.profile("strict")), jobs=1))
    assert len(results) > 5
    assert [n for _, done in results for n, _ in done.bad] == list(range(97, 1001, 97))
    assert [b.first for b, _ in results[1:]] == [b.first + d.lines for b, d in results[:-1]]


def _write_urls(path: Path, count: int) -> None:
    with path.open("w") as f:
        for i in range(count):
            # Mostly canonical already (the fast path), one in eight rewritten.
            f.write(f"HTTP://H{i % 97}.example/%7e{i}\n" if i % 8 == 0 else f"http://h/{i}\n")


def _peak(urlsan: RunUrlsan, *argv: str) -> int:
    tracemalloc.start()
    try:
        assert urlsan("canon", *argv).status == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_flat_in_the_number_of_lines(urlsan: RunUrlsan, tmp_path: Path) -> None:
    """The 10-million-line claim, scaled down: 5× the lines, not 5× the memory
    (bench/cli.py measures the RSS of a real 10-million-line run)."""
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    _write_urls(small, 60_000)
    _write_urls(large, 300_000)
    out = str(tmp_path / "out.txt")
    _peak(urlsan, "-i", str(small), "-o", out)  # warm caches (lru_cache, regexes) first
    peak_small = _peak(urlsan, "-i", str(small), "-o", out)
    peak_large = _peak(urlsan, "-i", str(large), "-o", out)
    assert peak_large < 1.5 * peak_small + 256 * 1024, (peak_small, peak_large)


@pytest.fixture
def pool_started() -> Iterator[list[int]]:
    """Workers from the second block on (not after some work); lists each pool's size."""
    started: list[int] = []
    names = (
        "POOL_AFTER_SECONDS",
        "POOL_SAMPLE_SECONDS",
        "POOL_MIN_WORK_SECONDS",
        "POOL_MIN_LINE_SECONDS",
        "POOL_MIN_SPAN_LINE_SECONDS",
        "_pooled",
    )
    saved = [getattr(batch, name) for name in names]

    def pooled(first: Block, blocks: Iterator[Block], processor: Processor, jobs: int) -> Any:
        started.append(jobs)
        return saved[-1](first, blocks, processor, jobs)

    # Set by hand: the runner's monkeypatch.undo() would undo a monkeypatch made here.
    for name, value in zip(names, (0.0, 0.0, 0.0, 0.0, 0.0, pooled), strict=True):
        setattr(batch, name, value)
    try:
        yield started
    finally:
        for name, value in zip(names, saved, strict=True):
            setattr(batch, name, value)


def _messy_file(path: Path, count: int) -> list[str]:
    lines = [
        f"HTTP://H{i % 7}.example/%7e{i}/./x" if i % 3 else f"http://h/{i}" for i in range(count)
    ]
    lines[10] = ""
    lines[count - 500] = "http://a/b c"
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_jobs_keep_order_and_match_one_process(
    urlsan: RunUrlsan, tmp_path: Path, pool_started: list[int]
) -> None:
    urls = tmp_path / "urls.txt"
    lines = _messy_file(urls, 12_000)  # three blocks; bad lines in between
    for mode in (["--json"], ["--check", "--dedupe"], ["--diff", "--on-error", "skip"]):
        one = urlsan("canon", "-i", str(urls), "--profile", "strict", *mode)
        two = urlsan("canon", "-i", str(urls), "--profile", "strict", "--jobs", "2", *mode)
        assert one == two, mode
        assert one.status == EXIT_BAD_LINES
    assert pool_started == [2] * 3
    plain = urlsan("canon", "-i", str(urls), "--profile", "strict", "--jobs", "2")
    assert pool_started == [2] * 4
    assert len(plain.lines) == len(lines)
    assert plain.lines[4] == "http://h4.example/~4/x"
    assert [x.split(":")[2] for x in plain.err.splitlines()[:2]] == ["11", "11501"]
    assert plain.lines[-1] == canonicalize(lines[-1], Policy.profile("strict")).url
    assert not worker_pids(os.getpid())  # every worker ended with the run


def test_workers_reading_spans_number_lines_as_one_process(
    urlsan: RunUrlsan, tmp_path: Path, pool_started: list[int]
) -> None:
    """Once workers run on a file they read it themselves, in spans: the output, and the
    numbers of the bad lines, as one process gives them."""
    urls = tmp_path / "urls.txt"
    _messy_file(urls, 12_000)
    spanned: list[bool] = []
    saved = batch.file_spans, batch.POOL_BLOCK_BYTES

    def file_spans(reader: BlockReader, size: int) -> Iterator[Block] | None:
        found = saved[0](reader, size)
        spanned.append(found is not None)
        return found

    # Set by hand: the runner's monkeypatch.undo() would undo a monkeypatch made here.
    batch.file_spans, batch.POOL_BLOCK_BYTES = file_spans, 10_000  # dozens of spans
    try:
        for mode in ([], ["--json"], ["--on-error", "skip"]):
            one = urlsan("canon", "-i", str(urls), "--profile", "strict", *mode)
            two = urlsan("canon", "-i", str(urls), "--profile", "strict", "--jobs", "2", *mode)
            assert one == two, mode
            assert [x.split(":")[2] for x in two.err.splitlines()[:2]] == ["11", "11501"]
    finally:
        batch.file_spans, batch.POOL_BLOCK_BYTES = saved
    assert spanned == [True] * 3 and pool_started == [2] * 3


# `urlsan canon` with workers from the second block on, in a process of its own.
_EAGER_POOL = """
import sys
from urlsan.cli import batch, main
batch.POOL_SAMPLE_SECONDS = batch.POOL_MIN_WORK_SECONDS = 0.0
batch.POOL_MIN_LINE_SECONDS = batch.POOL_MIN_SPAN_LINE_SECONDS = 0.0
batch.POOL_BLOCK_BYTES = 10_000
sys.exit(main(sys.argv[1:]))
"""


def test_workers_read_a_file_given_as_standard_input(tmp_path: Path) -> None:
    """``urlsan canon -j 2 < file``: standard input is a regular file, which the workers read
    in spans through the descriptor they inherit."""
    urls = tmp_path / "urls.txt"
    lines = _messy_file(urls, 12_000)
    with urls.open("rb") as stdin:
        run = subprocess.run(
            [sys.executable, "-c", _EAGER_POOL, "canon", "-j", "2", "--profile", "strict"],
            stdin=stdin, capture_output=True, timeout=120,
        )  # fmt: skip
    out = run.stdout.decode().splitlines()
    assert len(out) == len(lines) and run.returncode == EXIT_BAD_LINES
    assert out[4] == "http://h4.example/~4/x"
    assert out[-1] == canonicalize(lines[-1], Policy.profile("strict")).url
    assert [x.split(":")[2] for x in run.stderr.decode().splitlines()[:2]] == ["11", "11501"]


def test_jobs_stop_at_the_first_bad_line_like_one_process(
    urlsan: RunUrlsan, tmp_path: Path, pool_started: list[int]
) -> None:
    """--on-error fail leaves the workers in the middle of the input: they end all the same."""
    urls = tmp_path / "urls.txt"
    lines = _messy_file(urls, 12_000)
    lines[10] = "http://h/10"  # the first bad line is the one in the third block
    urls.write_text("\n".join(lines) + "\n")
    options = ("-i", str(urls), "--profile", "strict", "--on-error", "fail", "--check")
    one = urlsan("canon", *options)
    two = urlsan("canon", *options, "--jobs", "2")
    assert one == two and pool_started == [2]
    assert one.status == EXIT_BAD_LINES and "stopped at bad line 11501" in one.err
    assert not worker_pids(os.getpid())


class _FailsAfterTheFirstBlock(Processor):
    def __call__(self, block: Block) -> Done:
        if block.first > 1:
            raise ZeroDivisionError("a bug")
        return super().__call__(block)


def test_spawned_workers_give_the_output_of_one_process(pool_started: list[int]) -> None:
    """Where fork is not the start method (macOS, Windows), workers are spawned through
    multiprocessing: the same results, in order, and every worker ended after the run."""
    blocks = [Block(b"HTTP://a/%d/./x\n%%zz\n" % i, i * 2 - 1) for i in range(1, 7)]
    one = [done.pieces for _, done in batch.run_blocks(blocks, Processor(Policy()))]
    saved = batch.START_METHOD, workers._spawn
    spawned: list[int] = []

    def spawn(processor: Processor, others: list[Any]) -> Any:
        spawned.append(1)
        return saved[1](processor, others)

    batch.START_METHOD, workers._spawn = "spawn", spawn
    try:
        two = [done.pieces for _, done in batch.run_blocks(blocks, Processor(Policy()), jobs=2)]
    finally:
        batch.START_METHOD, workers._spawn = saved
    assert two == one and pool_started == [2] and spawned == [1, 1]
    assert one[2] == [b"http://a/3/x\n%25zz\n"]
    assert not worker_pids(os.getpid())


def test_workers_that_cannot_start_leave_the_run_to_one_process(
    urlsan: RunUrlsan, tmp_path: Path, pool_started: list[int]
) -> None:
    """fork failing (EAGAIN at the user's process limit, ENOMEM) is a one-line note and the
    output of one process, not a traceback; a worker started before it is ended."""
    urls = tmp_path / "urls.txt"
    _messy_file(urls, 12_000)
    one = urlsan("canon", "-i", str(urls), "--profile", "strict")
    saved = workers._fork
    forks: list[int] = []

    def fork(processor: Processor, others: list[Any]) -> Any:
        if forks:
            raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        forks.append(1)
        return saved(processor, others)

    workers._fork = fork
    try:
        for mode in ([], ["--diff"]):  # spans read here, and blocks sent by the reader
            forks.clear()
            two = urlsan("canon", "-i", str(urls), "--profile", "strict", "-j", "2", *mode)
            assert two.lines == urlsan("canon", "-i", str(urls), "--profile", "strict", *mode).lines
            assert two.status == one.status
            assert two.err.count("cannot start worker processes") == 1
            assert "Traceback" not in two.err
    finally:
        workers._fork = saved
    assert pool_started == [2, 2]
    assert not worker_pids(os.getpid())


def test_a_bug_in_a_worker_is_raised_as_itself(pool_started: list[int]) -> None:
    """An exception in a worker is a bug to report with its own type, not a dead worker
    (exit 5 tells the user to look for the out-of-memory killer)."""
    blocks = [Block(b"http://a/%d\n" % i, i) for i in range(1, 4)]
    results = batch.run_blocks(blocks, _FailsAfterTheFirstBlock(Policy()), jobs=2)
    assert next(results)[1].pieces == [b"http://a/1\n"]  # in this process
    with pytest.raises(ZeroDivisionError, match="a bug"):
        next(results)
    assert pool_started == [2]
    results.close()
    assert not worker_pids(os.getpid())


def test_cheap_lines_stay_in_one_process(
    urlsan: RunUrlsan, tmp_path: Path, pool_started: list[int]
) -> None:
    urls = tmp_path / "urls.txt"
    _messy_file(urls, 12_000)
    saved = batch.POOL_MIN_LINE_SECONDS, batch.POOL_MIN_SPAN_LINE_SECONDS
    # No line takes a second: workers never pay.
    batch.POOL_MIN_LINE_SECONDS = batch.POOL_MIN_SPAN_LINE_SECONDS = 1.0
    try:
        assert urlsan("canon", "-i", str(urls), "--jobs", "2").status == EXIT_BAD_LINES
    finally:
        batch.POOL_MIN_LINE_SECONDS, batch.POOL_MIN_SPAN_LINE_SECONDS = saved
    assert pool_started == []


def test_a_large_file_goes_to_workers_from_its_first_block(
    urlsan: RunUrlsan, tmp_path: Path, pool_started: list[int]
) -> None:
    """A regular file of POOL_START_BYTES or more starts the workers before any sample (which
    left the second core idle); the output is that of one process all the same."""
    urls = tmp_path / "urls.txt"
    _messy_file(urls, 12_000)
    names = ("POOL_START_BYTES", "POOL_MIN_LINE_SECONDS", "POOL_MIN_SPAN_LINE_SECONDS")
    saved = [getattr(batch, name) for name in names]
    one = urlsan("canon", "-i", str(urls), "--profile", "strict")
    # No line takes a second, so no sample would start them: only the file's size does.
    batch.POOL_MIN_LINE_SECONDS = batch.POOL_MIN_SPAN_LINE_SECONDS = 1.0
    try:
        batch.POOL_START_BYTES = urls.stat().st_size + 1
        assert urlsan("canon", "-i", str(urls), "--profile", "strict", "-j", "2") == one
        assert pool_started == []
        batch.POOL_START_BYTES = urls.stat().st_size
        assert urlsan("canon", "-i", str(urls), "--profile", "strict", "-j", "2") == one
        assert pool_started == [2]
        # Line numbers in the output: the workers cannot read spans, and a sample decides.
        urlsan("canon", "-i", str(urls), "--profile", "strict", "-j", "2", "--diff")
        assert pool_started == [2]
    finally:
        for name, value in zip(names, saved, strict=True):
            setattr(batch, name, value)


def test_workers_start_only_for_long_costly_inputs() -> None:
    pay = batch._workers_pay
    assert not pay(0.0, 0, None)  # nothing measured yet
    assert not pay(0.1, 100_000, None)  # a pipe, of unknown length: not 0.2 s of work yet
    assert pay(0.3, 100_000, None)
    assert not pay(0.3, 1_000_000, None)  # 0.3 µs a line: cheaper here than sent away
    # Clean real URLs, 0.9 µs a line: -j 2 was slower on them than -j 1 (bench/cli.py), unless
    # the workers read them from the file themselves (spans).
    assert not pay(0.9, 1_000_000, None)
    assert pay(0.9, 1_000_000, lambda: 0.1, spans=True)
    assert not pay(0.3, 1_000_000, lambda: 0.1, spans=True)
    assert pay(2.5, 1_000_000, None)  # dirty ones
    # A file: the work left is known from the first blocks' share of it.
    assert not pay(0.01, 3_000, lambda: 0.001)  # too small a sample to tell
    left = batch.POOL_MIN_WORK_SECONDS
    assert not pay(0.05, 10_000, lambda: 0.05 / (0.05 + left * 0.9))  # 0.9x the least left
    assert pay(0.05, 10_000, lambda: 0.05 / (0.05 + left * 1.1))
    assert not pay(0.05, 10_000, lambda: 1.0)  # all read already


def test_workers_catch_up_when_the_input_pauses(pool_started: list[int]) -> None:
    """A block read before a pause comes back before the next block is read: with workers
    too, a line never waits for input that may not come."""
    pulled: list[int] = []

    def blocks() -> Iterator[Block]:
        for first, pause in [(1, False), (2, False), (3, False), (4, True), (5, False)]:
            pulled.append(first)
            yield Block(b"HTTP://a/%d\n" % first, first, pause)

    results = batch.run_blocks(blocks(), Processor(Policy()), jobs=2)
    for first in (1, 2, 3, 4):
        block, done = next(results)
        assert (block.first, done.pieces) == (first, [b"http://a/%d\n" % first])
    assert pulled == [1, 2, 3, 4] and pool_started == [2]
    assert [block.first for block, _ in results] == [5]


def _feed_forever(stream: IO[bytes], stop: threading.Event) -> None:
    # Lines costly enough that workers pay, whatever the machine's load: about 4 µs each with
    # the compiled twin, well over batch.POOL_MIN_LINE_SECONDS (one segment of them, 1.1 µs a
    # line, sat under it once the twin got faster, and workers started only on a busy machine).
    segment = "%%7e%d/./a/../x/café/%%7e%%7E%%7e<>/"
    line = f"HTTP://H%d.EXAMPLE:80/{segment * 6}?q=%%7e%%7e#f\n".encode()
    lines = b"".join(line % (i % 97, *(i,) * 6) for i in range(5000))
    with contextlib.suppress(OSError):  # the reader went away
        while not stop.is_set():
            stream.write(lines)


@contextlib.contextmanager
def _workers_running(stderr: int) -> Iterator[tuple[subprocess.Popen[bytes], list[int]]]:
    """``urlsan canon --jobs 2`` fed without end, once its two workers run: the process and the
    workers' ids.  Afterwards the feeding stops, and the process is killed if it still runs."""
    proc = subprocess.Popen(
        [*URLSAN, "canon", "--jobs", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    assert proc.stdin is not None
    stop = threading.Event()
    threading.Thread(target=_feed_forever, args=(proc.stdin, stop), daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        while len(workers := worker_pids(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2, "the workers did not start"
        yield proc, workers
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds workers through /proc")
def test_a_dead_worker_ends_the_run_with_one_line() -> None:
    """kill -9 of a worker used to hang the run forever, at 0% CPU (issue #12)."""
    with _workers_running(subprocess.PIPE) as (proc, workers):
        time.sleep(0.5)  # in the middle of the work
        os.kill(workers[0], signal.SIGKILL)
        status = proc.wait(timeout=30)  # the input never ends: only the error stops the run
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    assert status == EXIT_WORKER_DIED
    assert err.count("\n") == 1 and "a worker process died" in err, err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)  # none left behind


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds workers through /proc")
def test_workers_end_when_the_main_process_is_killed() -> None:
    """kill -9 of the command leaves no worker behind, busy or waiting for a block."""
    with _workers_running(subprocess.DEVNULL) as (proc, workers):
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _alive(workers)
    for pid in left:  # not left running after a failure
        os.kill(pid, signal.SIGKILL)
    assert not left


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie, ended but not yet reaped by init, is not)."""
    alive = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                alive.append(pid)
    return alive
