"""`urlsan audit`: audit traffic recorded elsewhere (mitmproxy flow files, HAR, access logs).

Every request is decided as the proxy decides it (`urlsan.addon.decision`; in
``urlsan_mode=audit`` unless ``--mode`` names another), and the same audit records are written
(redacted and capped by ``serialize``), so ``urlsan report`` reads them unchanged.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import IO, Any

from ..addon import decision
from ..audit import record, sources
from ..audit.redact import DEFAULT_REDACT, Redactor
from ..core import backends
from ..core.policy import PROFILES
from .canon import FLAGS
from .inputs import close_input
from .output import Output
from .progress import Progress, input_size
from .status import EXIT_BAD_LINES, EXIT_OK, EXIT_WRITE_ERROR, OutputError, UsageError
from .terminal import isatty

_EXAMPLES = 5  # unreadable entries shown by place; the others only counted


def add_parser(sub: Any) -> None:
    audit = sub.add_parser(
        "audit",
        help="audit recorded traffic: mitmproxy flow files, HAR, access logs",
        description="Decide every request of recorded traffic as the proxy does (in audit "
        "mode, unless --mode names another), and write the audit records it would have "
        "written (JSON Lines) for `urlsan report`. "
        "Reads mitmproxy flow files (mitmdump -w; needs mitmproxy), HAR files and access logs "
        "in the combined or common format (nginx, Apache); gzip is detected.",
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
    # As canon's: no -p, which in `urlsan proxy -p` is mitmdump's port.
    audit.add_argument(
        "--profile",
        default="rfc3986",
        metavar="NAME",
        help=f"rule profile: {', '.join(PROFILES)} (default: rfc3986, as the proxy's)",
    )
    audit.add_argument(
        "--rules",
        default="",
        metavar="SPEC",
        help="switch rules on and off, as urlsan_rules does: '+merge-slashes,-strip-fragment'",
    )
    audit.add_argument(
        "--mode",
        choices=decision.MODES,
        default="audit",
        help="record what the proxy would have done in this urlsan_mode (default: audit)",
    )
    audit.add_argument(
        "--backends",
        metavar="NAMES",
        default="",
        help="comma-separated servers behind the proxy, as urlsan_backends: a request one of "
        "them would route otherwise than RFC 3986 is recorded with its reading (and rejected "
        "in the other modes): " + ", ".join(backends.NAMES),
    )
    audit.add_argument(
        "--signed",
        choices=decision.SIGNED,
        default="skip",
        help="as urlsan_signed: skip (default) only records signed requests, rewrite treats "
        "them like any other",
    )
    audit.add_argument(
        "--redact",
        metavar="NAMES",
        default=None,
        help="comma-separated query parameter names whose values are masked in the records "
        "(replaces the default list, as the proxy's urlsan_redact does)",
    )
    audit.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (shown on a terminal for inputs taking over 1 s)",
    )
    audit.add_argument(
        "-q", "--quiet", action="store_true", help="no summary on stderr (problems still are)"
    )
    audit.set_defaults(func=cmd_audit)


class Auditor:
    """What the proxy would have recorded for one request: `urlsan.addon.decision` decides, as
    it does for the proxy, in the mode the proxy would have run in (audit by default)."""

    def __init__(self, settings: decision.Settings, redactor: Redactor | None = None) -> None:
        self.settings = settings
        self.redactor = redactor or Redactor.of(DEFAULT_REDACT)

    def check(self, request: sources.Request) -> dict[str, Any] | None:
        """The audit record of ``request``, or None when the proxy would log nothing."""
        outcome = decision.examine(request, self.settings)
        if outcome is None or not outcome.recorded:
            return None
        ts = record.rfc3339(request.ts) if request.ts is not None else ""
        return decision.record(request, outcome, self.settings, ts)


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


def _open(path: str, fmt: str) -> tuple[IO[bytes], str]:
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
    missing = sources.missing_reader(found)
    if missing is not None:
        close_input(stream)
        raise UsageError(f"{path}: {missing}")
    return stream, found


def _audit_file(
    stream: IO[bytes],
    fmt: str,
    name: str,
    auditor: Auditor,
    write: Callable[[bytes], None],
    tally: _Tally,
    progress: Progress,
) -> None:
    try:
        for item in sources.read(stream, fmt, name):
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


def cmd_audit(args: argparse.Namespace) -> int:
    names = DEFAULT_REDACT if args.redact is None else args.redact.split(",")
    try:
        settings = decision.settings(
            args.mode,
            args.profile,
            args.rules,
            signed=args.signed,
            names=FLAGS,
            backends=args.backends,
            backends_option="--backends",
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    auditor = Auditor(settings, Redactor.of(names))
    # Every input is opened (and its format found) before anything is written.
    opened = [(path, *_open(path, args.format)) for path in args.files]
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
                    _audit_file(stream, fmt, name, auditor, out.write, tally, progress)
                finally:
                    progress.close()
                    close_input(stream)  # and the file under a .gz
        finally:
            out.close()
    except OutputError as e:
        err.write(f"urlsan audit: cannot write {args.output}: {e}; the records are incomplete\n")
        return EXIT_WRITE_ERROR
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
