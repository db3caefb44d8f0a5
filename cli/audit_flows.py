"""``urlsan audit --jobs N`` of a mitmproxy flow file: spans of whole flows, each read and
audited by a worker process (`FlowSpans`, `FlowWork`), the records written in file order.

A flow file is a sequence of tnetstrings, each ``LENGTH:DATA`` and a type byte (mitmproxy's
``io/tnetstring.py``), so the main process finds where each flow ends from its length alone,
without parsing it: a read of a few bytes per flow, while mitmproxy's parsing of the flow, most
of what auditing a flow file costs, is the workers'.  Each worker reads its span of the file
itself (``os.pread``, forked workers only) and reads it with `sources.read_flows`, as one
process reads the whole file.  Where the flows stop being whole (a file cut short, bytes that
are no tnetstring), the spans end, and the rest is read in the main process, which says what
one process says of it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from typing import Any

from ..audit import record, sources
from .audit_lines import Auditor
from .blocks import Block, Done

SPAN_BYTES = 1 << 20  # about 300 flows with their bodies: one trip to a worker
_HEAD = 13  # a length of at most 12 digits and its ':' (tnetstring.load refuses longer)


class FlowSpans:
    """The spans of whole flows of the flow file ``fd`` from ``start``: `Block` s whose
    ``first`` is the number of flows before the span.  Once iterated, ``end`` is where the
    whole flows end and ``flows`` how many there are."""

    def __init__(self, fd: int, start: int, size: int | None = None) -> None:
        self.fd, self.start, self.size = fd, start, size or SPAN_BYTES
        self.end, self.flows = start, 0

    def __iter__(self) -> Iterator[Block]:
        total = os.fstat(self.fd).st_size
        at = begin = self.start
        first = count = 0
        while at < total:
            head = os.pread(self.fd, _HEAD, at)
            colon = head.find(b":")
            if colon < 1 or not head[:colon].isdigit():
                break  # no tnetstring: one process says what
            after = at + colon + 1 + int(head[:colon]) + 1  # the data, then its type byte
            if after > total:
                break  # cut short
            at, count = after, count + 1
            if at - begin >= self.size:
                yield Block(b"", first, span=(self.fd, begin, at))
                begin, first = at, count
            self.end, self.flows = at, count
        if at > begin:
            yield Block(b"", first, span=(self.fd, begin, at))


class FlowWork:
    """Audits a span of whole flows (`blocks.Work`), in a forked worker: its `Done` counts the
    flows (``lines``), the requests (``valid``) and the records (``changed``); ``bad`` holds
    what `sources.read_flows` could not read, as ``(flows before it, "WHERE\\nWHY")``."""

    numbers_lines = True  # not read in spans by `batch`: `FlowSpans` makes its own

    def __init__(self, auditor: Auditor, name: str) -> None:
        self.auditor, self.name = auditor, name

    def __call__(self, block: Block) -> Done:
        assert block.span is not None
        fd, start, end = block.span
        data = os.pread(fd, end - start, start)
        stream: Any = io.BufferedReader(io.BytesIO(data))
        out: list[bytes] = []
        bad: list[tuple[int, str]] = []
        requests = 0
        for item in sources.read_flows(stream, self.name, before=block.first):
            if isinstance(item, sources.Unreadable):
                bad.append((block.first, f"{item.where}\n{item.why}"))
                continue
            requests += 1
            rec = self.auditor.check(item)
            if rec is not None:
                out.append(record.serialize(rec, self.auditor.redactor))
        return Done(0, requests, len(out), [b"".join(out)], bad, [])


def run(
    spans: FlowSpans,
    work: FlowWork,
    jobs: int,
    on_done: Callable[[Done], bool],
) -> None:
    """Each span's `Done` to ``on_done``, in file order, from ``jobs`` forked workers, until
    it says to stop (False: a span held unreadable flow data, where one process stops)."""
    from .workers import Pool  # only with --jobs

    pool = Pool(work, jobs, fork=True)
    finished = False
    try:
        for _, done in pool.run(spans, limit=2 * jobs + 2):
            if not on_done(done):
                break
        else:
            finished = True
    finally:
        pool.close(kill=not finished)
