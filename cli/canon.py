"""`urlsan canon`: canonicalize URLs from arguments, a file or standard input, in input order."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

from ..addon.options import BY_NAME, CANON
from ..core import Policy, backends, canonicalize
from ..core.options import policy_from_options
from .argtypes import positive
from .batch import run_blocks
from .blocks import Block, Done, Entry
from .flags import FLAGS, add_batch_flags, add_flags, values
from .formats import Mode
from .inputs import MAX_LINE_BYTES, BlockReader, arguments_block, close_input, open_input
from .output import Output
from .processor import OnError, Processor, digest
from .progress import Progress, input_size
from .status import (
    EXIT_BAD_LINES,
    EXIT_OFFENDERS,
    EXIT_OK,
    EXIT_WORKER_DIED,
    EXIT_WRITE_ERROR,
    OutputError,
    UsageError,
    WorkerDied,
)
from .terminal import isatty, safe_bytes, shown

TYPING = "reading URLs from the terminal, one per line; Ctrl-D ends (Ctrl-Z Enter on Windows)"
# Bad lines reported one by one on stderr; past this, they are only counted (binary input
# would otherwise write a line of stderr per line of input).
MAX_REPORTED = 20


def add_parser(sub: Any) -> None:
    canon = sub.add_parser(
        "canon",
        help="canonicalize URLs from arguments, a file or standard input",
        description="Canonicalize URLs, one output line per input line, in input order. "
        "Reads arguments, or -i FILE, or standard input (gzip is detected).",
        epilog="Exit statuses: 0 ok, 1 --check found offenders, 2 usage, 3 bad lines, "
        "4 the output could not be written, 5 a --jobs worker died, 141 the reader of "
        "standard output went away.",
    )
    canon.add_argument("urls", nargs="*", metavar="URL", help="URLs (default: read lines)")
    canon.add_argument("-i", "--input", metavar="FILE", help="read URLs from FILE ('-': stdin)")
    canon.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default="-",
        help="write to FILE (gzip if it ends in .gz; default: stdout)",
    )
    add_flags(canon, CANON)  # --profile, --rules, --drop-params, ...: the proxy's options
    canon.add_argument(
        "--form",
        default="auto",
        choices=("auto", "absolute", "origin", "authority", "asterisk", "reference"),
        help="request-target form of every input (default: auto)",
    )
    canon.add_argument(
        "--key",
        choices=("url", "surt"),
        default="url",
        help="write each URL's canonical form (url, default) or its SURT key, as web archives "
        'index URLs (surt: org,archive)/index.html; see "Web archives: SURT keys" in the urlsan '
        "documentation)",
    )
    canon.add_argument(
        "--key-profile",
        choices=("ia", "urlsan"),
        default="ia",
        help="with --key surt: the Internet Archive's canonicalization, as the surt package "
        "(ia, default), or the key of urlsan's canonical form under the policy (urlsan)",
    )
    out = canon.add_mutually_exclusive_group()
    out.add_argument(
        "--json", action="store_true", help="one JSON object per line: input, url, edits, findings"
    )
    out.add_argument(
        "--diff",
        action="store_true",
        help="only the changed URLs: before and after, with the rules that fired",
    )
    canon.add_argument(
        "--check",
        action="store_true",
        help="list the inputs that are not canonical; exit 1 if there are any",
    )
    canon.add_argument(
        "--dedupe",
        action="store_true",
        help="keep the first input of each canonical form; count the others",
    )
    canon.add_argument(
        "--on-error",
        choices=("pass", "skip", "fail"),
        default="pass",
        help="a bad line is written unchanged (pass, default), left out (skip), or stops the "
        "run (fail); it is reported on stderr and the exit status is 3",
    )
    canon.add_argument(
        "-z",
        "--null",
        action="store_true",
        help="lines end with NUL instead of newline, in and out (as find -print0, xargs -0)",
    )
    canon.add_argument(
        "--line-buffered",
        action="store_true",
        help="write each line as soon as it is read (slower on large inputs; one process)",
    )
    canon.add_argument(
        "--max-length",
        type=positive,
        default=None,
        metavar="BYTES",
        help="lines longer than this are bad lines (default: 65536)",
    )
    add_batch_flags(canon)
    canon.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="color --diff output (default: when stdout is a terminal)",
    )
    canon.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no summary on stderr (bad lines are still reported)",
    )
    canon.set_defaults(func=cmd_canon)


def make_policy(
    profile: str, rules: str, drop: Iterable[str] = (), keep: Iterable[str] = ()
) -> Policy:
    """The policy the options name; `UsageError` for an unknown profile, rule or bad spec."""
    try:
        return policy_from_options(profile, rules, tuple(drop), tuple(keep), names=FLAGS)
    except ValueError as e:
        raise UsageError(str(e)) from None


def cmd_canon(args: argparse.Namespace) -> int:
    given = values(args, CANON)
    policy = make_policy(
        given["profile"], given["rules"], given["drop_params"], given["keep_params"]
    )
    if args.urls and args.input:
        raise UsageError("give URLs as arguments or with -i FILE, not both")
    source = "argv" if args.urls else (args.input or "-")
    name = {"argv": "argument", "-": "<stdin>"}.get(source, source)
    if source == "-" and isatty(sys.stdin):  # not waiting in silence for what is typed
        sys.stderr.write(f"urlsan canon: {TYPING}\n")
    stream = None if args.urls else _open_input(source)
    if args.key == "surt":
        return _surt_keys(args, policy, stream)
    try:
        output = Output(args.output)
    except BaseException:
        close_input(stream)
        raise
    session = _Session(args, name, output, _progress(args, stream))
    try:
        blocks, processor = _blocks(args, stream), _processor(args, policy, name)
        session.run(blocks, processor, _jobs_for(args), _read_share(stream))
        if isinstance(blocks, BlockReader) and blocks.cut is not None:
            session.cut(blocks.cut)  # a bad line: the run's status is 3
    except OutputError as e:
        return _fail(f"cannot write {output.shown}: {e}", EXIT_WRITE_ERROR, output)
    except WorkerDied:
        message = "a worker process died (killed, or out of memory): the output is incomplete"
        return _fail(message, EXIT_WORKER_DIED, output)
    finally:
        session.progress.close()
        close_input(stream)
    try:
        output.close()
    except OutputError as e:
        return _fail(f"cannot write {output.shown}: {e}", EXIT_WRITE_ERROR, output)
    return session.finish()


def _surt_keys(args: argparse.Namespace, policy: Policy, stream: IO[bytes] | None) -> int:
    """``--key surt``: the SURT key of each line, one line each, in input order; a line that
    cannot be keyed (a port that is not a number, a URL the policy refuses) is a bad line."""
    from ..core.surt import ia_key, urlsan_key

    if args.json or args.diff or args.check or args.dedupe or args.jobs != 1:
        close_input(stream)
        raise UsageError(
            "--key surt writes keys only: not with --json, --diff, --check, --dedupe or --jobs"
        )
    sep = b"\0" if args.null else b"\n"
    lines, cut = _surt_lines(args, stream, sep)
    output, bad = Output(args.output), 0
    for number, raw in enumerate(lines, 1):
        text = raw.decode("utf-8", "surrogateescape").strip(" \t\r\n")
        try:
            if args.key_profile == "ia":
                key = ia_key(text)
            else:
                key = urlsan_key(canonicalize(text, policy, form=args.form).url)
        except ValueError as e:  # InvalidTarget
            bad += 1
            sys.stderr.write(f"urlsan canon: line {number}: {e}\n")
            if args.on_error == "fail":
                break
            if args.on_error == "skip":
                continue
            key = text
        output.write(key.encode("utf-8", "surrogateescape") + sep)
    if cut is not None:  # a gzip input cut short: the line it goes through is a bad line
        bad += 1
        sys.stderr.write(f"urlsan canon: line {len(lines) + 1}: {cut}\n")
    try:
        output.close()
    except OutputError as e:
        return _fail(f"cannot write {output.shown}: {e}", EXIT_WRITE_ERROR, output)
    return EXIT_BAD_LINES if bad else EXIT_OK


def _surt_lines(
    args: argparse.Namespace, stream: IO[bytes] | None, sep: bytes
) -> tuple[list[bytes], str | None]:
    """The lines ``--key surt`` keys, and why the input stopped early (a gzip file cut short)."""
    if stream is None:
        return [u.encode("utf-8", "surrogateescape") for u in args.urls], None
    try:
        reader = BlockReader(stream, sep=sep, max_bytes=sys.maxsize)  # no line is too long here
        lines = b"".join(block.data for block in reader).split(sep)
    finally:
        close_input(stream)
    lines.pop()  # each line ends with the separator: the last piece is empty
    return lines, reader.cut


def _open_input(source: str) -> IO[bytes]:
    try:
        return open_input(source)
    except OSError as e:
        raise UsageError(f"cannot read {source}: {e.strerror or e}") from None


def _fail(message: str, status: int, output: Output) -> int:
    output.abandon()
    sys.stderr.write(f"urlsan canon: error: {message}\n")
    return status


def _blocks(args: argparse.Namespace, stream: IO[bytes] | None) -> Iterable[Block]:
    if stream is None:
        return [arguments_block(args.urls)]
    return BlockReader(
        stream,
        sep=b"\0" if args.null else b"\n",
        max_bytes=args.max_length or MAX_LINE_BYTES,
        per_line=args.line_buffered,
    )


def _read_share(stream: IO[bytes] | None) -> Callable[[], float] | None:
    """How much of the input file has been read, when that can be known."""
    size, position = input_size(stream) if stream is not None else (None, None)
    if size is None or position is None:
        return None
    return lambda: position() / size


def _mode(args: argparse.Namespace) -> Mode:
    if args.check:
        return Mode.CHECK_JSON if args.json else Mode.CHECK_DIFF if args.diff else Mode.CHECK
    return Mode.JSON if args.json else Mode.DIFF if args.diff else Mode.URL


def _processor(args: argparse.Namespace, policy: Policy, name: str) -> Processor:
    try:
        protected = backends.parse_names(values(args, CANON)["backends"], BY_NAME["backends"].flag)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if protected and not (args.check or args.json or args.diff):
        raise UsageError("--backends says what servers read: use it with --check, --json or --diff")
    return Processor(
        policy,
        mode=_mode(args),
        form=args.form,
        on_error=OnError(args.on_error),
        dedupe=args.dedupe,
        max_bytes=args.max_length or MAX_LINE_BYTES,
        sep=b"\0" if args.null else b"\n",
        name=name,
        colors=_colors(args),
        backends=protected,
    )


def _jobs_for(args: argparse.Namespace) -> int:
    # One round trip to a worker per line would cost more than the line's work.
    return 1 if args.line_buffered else int(args.jobs)


def _colors(args: argparse.Namespace) -> bool:
    if args.color != "auto":
        return bool(args.color == "always")
    return bool(
        args.diff and args.output == "-" and isatty(sys.stdout) and "NO_COLOR" not in os.environ
    )


def _progress(args: argparse.Namespace, stream: IO[bytes] | None) -> Progress:
    size, position = input_size(stream) if stream is not None else (None, None)
    enabled = stream is not None and not args.no_progress and isatty(sys.stderr)
    return Progress(sys.stderr, size, position, enabled=enabled)


class _Session:
    """One run of `urlsan canon`: writes each processed block, reports bad lines, counts."""

    def __init__(
        self, args: argparse.Namespace, name: str, output: Output, progress: Progress
    ) -> None:
        self.args, self.name, self.output, self.progress = args, name, output, progress
        self.on_error = OnError(args.on_error)
        self.checking = bool(args.check)
        self.seen: dict[bytes, int] = {}
        # --dedupe --on-error pass: the bad lines passed through, by their output's digest.  A
        # bad line is deduplicated as any other output: a blank line is written once, not once
        # per blank line, and so is each repeated bad input.
        self.passed: set[bytes] = set()
        self.total = self.valid = self.changed = self.offenders = self.collapsed = 0
        self.bad = 0
        self.stopped_at: int | None = None  # --on-error fail: the bad line that stopped the run
        # Bad lines are passed through as they came, but never raw to a terminal (binary input
        # would drive it): there, bytes that are not UTF-8 and controls are shown as \xNN.
        self.raw = not (output.to_stdout and isatty(sys.stdout)) or _colors(args)

    def run(
        self,
        blocks: Iterable[Block],
        processor: Processor,
        jobs: int,
        read_share: Callable[[], float] | None,
    ) -> None:
        for block, done in run_blocks(blocks, processor, jobs, read_share):
            self.total += done.lines
            self.valid += done.valid
            self.changed += done.changed
            if done.entries or not done.pieces:
                self._entries(done.entries)
            else:
                self._pieces(done)
            if self.stopped_at is not None:
                return
            if block.pause or self.args.line_buffered:
                self.output.flush()
            self.progress.update(self.total)

    def _pieces(self, done: Done) -> None:
        if self.checking:
            self.offenders += done.changed
        write = self.output.write
        write(done.pieces[0])
        for (number, reason), piece in zip(done.bad, done.pieces[1:], strict=True):
            self._bad_line(number, reason)
            write(piece if self.raw else safe_bytes(piece))

    def _entries(self, entries: Sequence[Entry]) -> None:
        out: list[bytes] = []
        for e in entries:
            if e.key is None:
                self.output.write(b"".join(out))
                out = []
                self._bad_line(e.number, e.shown)
                if e.out and self._first_pass(e.out):
                    out.append(e.out if self.raw else safe_bytes(e.out))
                continue
            first = self.seen.get(e.key)
            if first is None:
                self.seen[e.key] = e.number
                self.offenders += self.checking and e.changed
                out.append(e.out)
                continue
            self.collapsed += 1
            if self.checking:
                self.offenders += 1
                out.append(self._duplicate(e, first))
        self.output.write(b"".join(out))

    def cut(self, reason: str) -> None:
        """The input stopped inside the line after the last one read (a gzip file cut short):
        a bad line, where the run stopped."""
        self._bad_line(self.total + 1, reason)
        self.stopped_at = self.total + 1

    def _first_pass(self, out: bytes) -> bool:
        """Whether a bad line's output is written for the first time (and is now)."""
        key = digest(out.decode("utf-8", "surrogateescape"))
        if key in self.passed:
            return False
        self.passed.add(key)
        return True

    def _duplicate(self, e: Entry, first: int) -> bytes:
        if self.args.json:
            obj = {**json.loads(e.shown), "duplicate_of": first}
            return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n"
        line = f"{self.name}:{e.number}: duplicate of line {first}: {shown(e.shown)}\n"
        return line.encode("utf-8", "surrogateescape")

    def _bad_line(self, number: int, reason: str) -> None:
        self.bad += 1
        if self.on_error is OnError.FAIL:
            self.stopped_at = number
        if self.bad > MAX_REPORTED + 1:
            return
        self.progress.close()
        if self.output.to_stdout:  # on a terminal, the report comes after the lines before it
            self.output.flush()
        if self.bad > MAX_REPORTED:
            sys.stderr.write(f"urlsan canon: more than {MAX_REPORTED} bad lines: counting them\n")
            return
        sys.stderr.write(f"urlsan canon: {self.name}:{number}: {reason}\n")

    def finish(self) -> int:
        """Write the summary; the exit status."""
        summary = self._summary()
        if summary and not self.args.quiet:
            lines = f"{self.total:,} line{'s' * (self.total != 1)}"
            sys.stderr.write(f"urlsan canon: {lines}: {'; '.join(summary)}\n")
        elif self.bad > MAX_REPORTED:  # -q: the count is all that says how many there were
            sys.stderr.write(f"urlsan canon: {self.bad:,} bad lines\n")
        if self.bad:
            return EXIT_BAD_LINES
        if self.checking and self.offenders:
            return EXIT_OFFENDERS
        return EXIT_OK

    def _summary(self) -> list[str]:
        args = self.args
        summary = []
        if args.check:
            servers = f" or read otherwise by {','.join(args.backends)}" if args.backends else ""
            summary.append(f"{self.offenders:,} of {self.valid:,} URLs not canonical{servers}")
        elif args.diff:
            summary.append(f"{self.changed:,} of {self.valid:,} URLs changed")
        if args.dedupe:
            summary.append(f"{len(self.seen):,} distinct, {self.collapsed:,} collapsed")
        if self.stopped_at is not None:
            summary.append(f"stopped at bad line {self.stopped_at}")
        elif self.bad:
            skipped = self.on_error is OnError.SKIP or args.diff or args.check
            fate = "skipped" if skipped else "passed through"
            if args.dedupe and not skipped:  # each distinct bad line once
                fate = f"({len(self.passed):,} distinct) passed through"
            summary.append(f"{self.bad:,} bad line{'s' * (self.bad != 1)} {fate}")
        return summary
