"""The ``--jobs`` worker processes: the `Pool` that hands each a block at a time and gives the
results back in input order, how a worker starts (forked, or spawned), what it runs, and the
wire between it and the main process.

Blocks cross the process border as bytes and come back as formatted output bytes, so the main
process only reads, dispatches and writes: the per-line work is all in the `Work` (canon's
`Processor`, audit's `LogLines`), which each worker receives once, when it starts.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import struct
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # multiprocessing itself only with --jobs: it is a tenth of the start-up
    from multiprocessing.connection import Connection

from .blocks import Block, Done, Work
from .status import WorkerDied


class _Task:
    """A block sent to a worker, and its result once back."""

    __slots__ = ("block", "done")

    def __init__(self, block: Block) -> None:
        self.block = block
        self.done: Done | None = None


class Pool:
    """Worker processes, each with a pipe of its own and one block at a time.

    No executor: the main thread sends each block to an idle worker, reads results as they
    come (`_ready`'s poll, or multiprocessing's wait for spawned workers) and hands them on in
    input order.  No thread of its own, so none is forked, and no hop through a queue's feeder
    or manager thread: once
    workers ran on 600,000 dirty lines, the main process spent 0.20 s of CPU behind
    `ProcessPoolExecutor`, 0.10 s here (bench/cli.py's input, best of 5).  A worker that dies
    closes its end of its pipe: the next read or write on it fails at once.
    """

    def __init__(self, processor: Work, jobs: int, fork: bool) -> None:
        """``jobs`` workers, forked (``fork``) or spawned."""
        _keep_freed_memory()  # before the forks: the workers inherit it
        self.pipes: list[Connection | _Channel] = []
        self.processes: list[_Forked | Any] = []  # Any: a multiprocessing Process (spawn)
        self.idle: list[int] = []
        self.busy: dict[int, _Task] = {}
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


def _fork(processor: Work, others: list[Any]) -> tuple[_Channel, _Forked]:
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
    """A forked worker process, as much of multiprocessing's Process as `Pool` uses."""

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


def _spawn(processor: Work, others: list[Any]) -> tuple[Connection, Any]:
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

    A block of `batch.POOL_BLOCK_BYTES` makes buffers of about that size (its text, its output).  By
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


def _serve(pipe: Connection | _Channel, processor: Work) -> None:
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
