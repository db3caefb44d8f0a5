"""`urlsan audit`: audit traffic recorded elsewhere (mitmproxy flow files, HAR, access logs).

Every request is decided as the proxy decides it (`urlsan.addon.decision`; in
``urlsan_mode=audit`` unless ``--mode`` names another), and the same audit records are written
(redacted and capped by ``serialize``), so ``urlsan report`` reads them unchanged.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

from ..addon import decision
from ..addon.options import AUDIT, BY_NAME
from ..audit import record, sources
from ..audit.redact import DEFAULT_REDACT, Redactor
from ..audit.traffic import CUT_LINE
from . import audit_flows, matching
from .audit_lines import LogLines, Quiet
from .batch import START_METHOD, run_blocks
from .blocks import Done
from .flags import FLAGS, add_batch_flags, add_flags, values
from .inputs import BlockReader, close_input
from .matching import Matcher, MatchingFlows
from .output import Output
from .progress import Progress, input_size
from .spans import regular_file
from .status import (
    EXIT_BAD_LINES,
    EXIT_OK,
    EXIT_WORKER_DIED,
    EXIT_WRITE_ERROR,
    OutputError,
    UsageError,
    WorkerDied,
)
from .terminal import isatty

__all__ = ["FORMAT_TITLES", "Auditor", "add_parser", "auditor_for", "cmd_audit"]

_EXAMPLES = 5  # unreadable entries shown by place; the others only counted


# What each format urlsan audit reads (`sources.FORMATS`, held equal by a test) is, as --help
# and its error messages say it.
FORMAT_TITLES: dict[str, str] = {
    "flows": "mitmproxy flow files (mitmdump -w; needs mitmproxy)",
    "har": "HAR files",
    "access-log": "access logs in the combined or common format (nginx, Apache)",
    "warc": "WARC files (needs warcio)",
    "cdx": "CDX indexes",
    "cdxj": "CDXJ indexes",
}


def _listed(items: list[str], last: str = "and") -> str:
    return ", ".join(items[:-1]) + f" {last} {items[-1]}" if len(items) > 1 else "".join(items)


def add_parser(sub: Any) -> None:
    audit = sub.add_parser(
        "audit",
        help="audit recorded traffic: "
        + ", ".join(t.split(" (")[0] for t in FORMAT_TITLES.values()),
        description="Decide every request of recorded traffic as the proxy does (in audit "
        "mode, unless --mode names another), and write the audit records it would have "
        "written (JSON Lines) for `urlsan report`. "
        f"Reads {_listed(list(FORMAT_TITLES.values()))}; gzip is detected.",
    )
    audit.add_argument("files", nargs="+", metavar="FILE", help="recorded traffic; '-': stdin")
    audit.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default="-",
        help="write the audit records to FILE (gzip if it ends in .gz; default: stdout)",
    )
    audit.add_argument(
        "--format",
        choices=("auto", *sources.FORMATS),
        default="auto",
        help="format of every FILE (default: auto, from its first bytes)",
    )
    # The options that change what the proxy decides or records, as the proxy's urlsan_*
    # options: --mode, --profile, --drop-params, ... (no -p, which in `urlsan proxy -p` is
    # mitmdump's port).
    add_flags(audit, AUDIT)
    add_batch_flags(
        audit,
        inputs=" for access logs and flow files",
        order="the records are those of --jobs 1, in the same order; ",
    )
    audit.add_argument(
        "-q", "--quiet", action="store_true", help="no summary on stderr (problems still are)"
    )
    audit.set_defaults(func=cmd_audit)


class Auditor:
    """What the proxy would have recorded for one request: `urlsan.addon.decision` decides, as
    it does for the proxy, in the mode the proxy would have run in (audit by default)."""

    def __init__(
        self,
        settings: decision.Settings,
        redactor: Redactor | None = None,
        matches: Matcher | None = None,
    ) -> None:
        self.settings = settings
        self.redactor = redactor or Redactor.of(DEFAULT_REDACT)
        self.matches = matches  # --filter: the flows the proxy's urlsan_filter lets through

    def check(self, request: sources.Request) -> dict[str, Any] | None:
        """The audit record of ``request``, or None when the proxy would log nothing."""
        outcome = decision.examine(request, self.settings)
        if outcome is None or not outcome.recorded:
            return None
        ts = record.rfc3339(request.ts) if request.ts is not None else ""
        return decision.record(request, outcome, self.settings, ts)

    def quiet_check(self) -> Quiet | None:
        """`decision.quiet` of these settings: the requests `check` would write no record for,
        told from their target and Host alone."""
        return decision.quiet(self.settings)


class _Tally:
    def __init__(self) -> None:
        self.requests = 0
        self.records = 0
        self.unreadable = 0
        self.examples: list[str] = []

    def bad(self, item: sources.Unreadable) -> None:
        self.unreadable += 1
        if len(self.examples) < _EXAMPLES:
            self.examples.append(f"{item.where}: {item.why}")


def _open(path: str, fmt: str, filtered: bool) -> tuple[IO[bytes], str]:
    try:
        stream = sources.open_source(path)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    found = sources.detect(stream) if fmt == "auto" else fmt
    if found is None:
        if sources.compressed_file(stream) is not stream:
            stream.read(1 << 16)  # a .gz cut short may say so a little further on
        close_input(stream)
        cut = sources.gzip_cut(stream)
        if cut is not None:  # a .gz torn within its first bytes: too little to know it by
            raise UsageError(f"{path}: {cut}: too little to tell the format by (use --format)")
        raise UsageError(
            f"{path}: not a format urlsan audit reads ({', '.join(sources.FORMATS)}; "
            "use --format to say which)"
        )
    if filtered and found != "flows":
        close_input(stream)
        raise UsageError(
            f"{path}: {BY_NAME['filter'].flag} reads mitmproxy flow files, not {found}"
        )
    missing = sources.missing_reader(found)
    if missing is not None:
        close_input(stream)
        raise UsageError(f"{path}: {missing}")
    return stream, found


def _audit_items(
    items: Iterator[sources.Item],
    name: str,
    auditor: Auditor,
    write: Callable[[bytes], None],
    tally: _Tally,
    progress: Progress,
) -> None:
    try:
        for item in items:
            if isinstance(item, sources.Unreadable):
                tally.bad(item)
                continue
            tally.requests += 1
            rec = auditor.check(item)
            if rec is not None:
                write(record.serialize(rec, auditor.redactor))
                tally.records += 1
            progress.update(tally.requests)
    except BrokenPipeError:
        raise  # the reader of standard output went away: main's to handle
    except (EOFError, OSError, UnicodeDecodeError) as e:
        # An input that fails under its reader (a read error of the disk, a pipe): what was
        # read counts, the rest of this file cannot be found.
        tally.bad(sources.Unreadable(name, f"cannot read further: {e}"))


def _audit_file(
    stream: IO[bytes],
    fmt: str,
    name: str,
    auditor: Auditor,
    write: Callable[[bytes], None],
    tally: _Tally,
    progress: Progress,
) -> None:
    flows = None
    if auditor.matches is not None:  # flow files alone (`_open`)
        flows = MatchingFlows(stream, auditor.matches)
        stream = io.BufferedReader(flows)
    _audit_items(sources.read(stream, fmt, name), name, auditor, write, tally, progress)
    if flows is not None and flows.error is not None:
        tally.bad(sources.Unreadable(name, f"unreadable flow data: {flows.error}"))


def _flows_in_spans(stream: IO[bytes], jobs: int, auditor: Auditor) -> bool:
    """Whether ``--jobs`` workers read a flow file in spans (`audit_flows`): a regular file,
    which forked workers have open, and no --filter (whose matching reads the stream)."""
    fork = START_METHOD == "fork"
    return jobs > 1 and fork and auditor.matches is None and regular_file(stream) is not None


def _audit_flows(
    stream: IO[bytes],
    name: str,
    auditor: Auditor,
    jobs: int,
    write: Callable[[bytes], None],
    tally: _Tally,
    progress: Progress,
) -> None:
    """A flow file's whole flows in spans, each audited by a worker, the records in file
    order; then the rest of it (a flow cut short, bytes that are no flow, flows written
    meanwhile) read here, as `_audit_file` reads a whole file."""
    spans = audit_flows.FlowSpans(cast(int, regular_file(stream)), stream.tell())
    stopped = False

    def on_done(done: Done) -> bool:
        nonlocal stopped
        write(done.pieces[0])
        tally.requests += done.valid
        tally.records += done.changed
        for _, text in done.bad:  # where one process stops reading
            where, _, why = text.partition("\n")
            tally.bad(sources.Unreadable(where, why))
            stopped = True
        progress.update(tally.requests)
        return not stopped

    audit_flows.run(spans, audit_flows.FlowWork(auditor, name), jobs, on_done)
    if stopped:
        return
    stream.seek(spans.end)
    rest = sources.read_flows(stream, name, before=spans.flows)
    _audit_items(rest, name, auditor, write, tally, progress)


def auditor_for(given: dict[str, Any]) -> Auditor:
    """The `Auditor` of the option values ``given`` (`flags.values` of `AUDIT`); `UsageError`
    for a bad one."""
    try:
        settings = decision.settings(
            given["mode"],
            given["profile"],
            given["rules"],
            signed=given["signed"],
            max_target=given["max_target"],
            drop_params=given["drop_params"],
            keep_params=given["keep_params"],
            names=FLAGS,
            backends=given["backends"],
            backends_option=BY_NAME["backends"].flag,
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    expr = given["filter"]
    missing = sources.missing_reader("flows") if expr else None
    if missing is not None:
        raise UsageError(f"{BY_NAME['filter'].flag}: {missing}")
    matches = matching.parse(expr, BY_NAME["filter"].flag) if expr else None
    return Auditor(settings, Redactor.of(given["redact"]), matches)


class _LogReader(BlockReader):
    """An access log in blocks of whole lines (`BlockReader`, lines of any length), which also
    knows whether the input ended inside a line: that line, unreadable, was cut short."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(stream, max_bytes=sys.maxsize)
        self.unended = False

    def _read(self, read: Callable[[int], bytes]) -> bytes:
        data = super()._read(read)
        if data:
            self.unended = not data.endswith(b"\n")
        return data

    def ended_inside_a_line(self) -> bool:
        """Whether the input's last byte is no line end (once it is read to its end: by this
        reader, or by workers reading spans of its file)."""
        fd = regular_file(self.stream)
        if fd is None:
            return self.unended
        size = os.fstat(fd).st_size
        return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _audit_log(
    stream: IO[bytes],
    name: str,
    lines: LogLines,
    jobs: int,
    write: Callable[[bytes], None],
    tally: _Tally,
    progress: Progress,
) -> None:
    """An access log a block at a time (`LogLines`), in ``jobs`` worker processes once they
    pay (`batch.run_blocks`, as ``urlsan canon``): the records in input order."""
    reader = _LogReader(stream)
    size, position = input_size(stream)
    share = (lambda: position() / size) if size and position is not None else None
    last: tuple[int, str] | None = None  # the last unreadable line: held until the end
    total = 0
    try:
        for _, done in run_blocks(reader, lines, jobs, share):
            write(done.pieces[0])
            tally.requests += done.valid
            tally.records += done.changed
            total += done.lines
            for number, why in done.bad:
                if last is not None:
                    tally.bad(sources.Unreadable(f"{name}:{last[0]}", last[1]))
                last = (number, why)
            progress.update(tally.requests)
    except (BrokenPipeError, OutputError, WorkerDied):
        raise
    except (EOFError, OSError) as e:  # as `_audit_file`: what was read counts
        tally.bad(sources.Unreadable(name, f"cannot read further: {e}"))
        return
    _last_line(reader, name, total, last, tally)


def _last_line(
    reader: _LogReader, name: str, total: int, last: tuple[int, str] | None, tally: _Tally
) -> None:
    """The last unreadable line, and where a gzip input is cut, told as `sources.read` tells
    them: the last line, unreadable and without its line end, was cut short; a cut through it
    is told with it."""
    final = last is not None and last[0] == total
    if last is not None:
        why = last[1]
        if final and why == sources.NOT_COMBINED and reader.ended_inside_a_line():
            why = CUT_LINE
        cut = sources.gzip_cut(reader.stream) if final else None
        tally.bad(sources.Unreadable(f"{name}:{last[0]}", why if cut is None else f"{why}; {cut}"))
        if final:
            return
    cut = sources.gzip_cut(reader.stream)
    if cut is not None:
        tally.bad(sources.Unreadable(name, cut))


def cmd_audit(args: argparse.Namespace) -> int:
    given = values(args, AUDIT)
    auditor = auditor_for(given)
    expr = given["filter"]
    # Every input is opened (and its format found) before anything is written.
    opened = [(path, *_open(path, args.format, bool(expr))) for path in args.files]
    out = Output(args.output)
    tally = _Tally()
    err = sys.stderr
    try:
        try:
            for path, stream, fmt in opened:
                # A .gz's progress in compressed bytes: the only size known in advance.
                size, position = input_size(sources.compressed_file(stream))
                enabled = not args.no_progress and isatty(err)
                progress = Progress(err, size, position, enabled=enabled)
                name = "<stdin>" if path == "-" else path
                try:
                    if fmt == "access-log":
                        lines = LogLines(auditor, auditor_for, (given,))
                        _audit_log(stream, name, lines, args.jobs, out.write, tally, progress)
                    elif fmt == "flows" and _flows_in_spans(stream, args.jobs, auditor):
                        _audit_flows(stream, name, auditor, args.jobs, out.write, tally, progress)
                    else:
                        _audit_file(stream, fmt, name, auditor, out.write, tally, progress)
                finally:
                    progress.close()
                    close_input(stream)  # and the file under a .gz
        finally:
            out.close()
    except OutputError as e:
        err.write(f"urlsan audit: cannot write {args.output}: {e}; the records are incomplete\n")
        return EXIT_WRITE_ERROR
    except WorkerDied:
        err.write(
            "urlsan audit: error: a worker process died (killed, or out of memory): "
            "the records are incomplete\n"
        )
        return EXIT_WORKER_DIED
    if not args.quiet:
        err.write(
            f"urlsan audit: {tally.requests:,} request{'s' * (tally.requests != 1)} checked, "
            f"{tally.records:,} audit record{'s' * (tally.records != 1)} written\n"
        )
    if tally.unreadable:
        err.write(
            f"urlsan audit: {tally.unreadable:,} unreadable line{'s' * (tally.unreadable != 1)} "
            f"or entr{'ies' if tally.unreadable != 1 else 'y'} left out, e.g.\n"
        )
        err.writelines(f"  {example}\n" for example in tally.examples)
        return EXIT_BAD_LINES
    return EXIT_OK
