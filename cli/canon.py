"""`urlsan canon`: canonicalize URLs from arguments, a file or standard input, in input order."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from typing import IO, Any, cast

from ..core import Policy
from ..core.policy import PROFILES
from . import batch
from .status import EXIT_BAD_LINES, EXIT_OFFENDERS, EXIT_OK, UsageError


def add_parser(sub: Any) -> None:
    canon = sub.add_parser(
        "canon",
        help="canonicalize URLs from arguments, a file or standard input",
        description="Canonicalize URLs, one output line per input line, in input order. "
        "Reads arguments, or -i FILE, or standard input (gzip is detected).",
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
    _policy_options(canon)
    canon.add_argument(
        "--form",
        default="auto",
        choices=("auto", "absolute", "origin", "authority", "asterisk", "reference"),
        help="request-target form of every input (default: auto)",
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
        choices=("pass", "skip"),
        default="pass",
        help="a bad line is written unchanged (pass, default) or left out "
        "(skip); either way it is reported on stderr and the exit status is 3",
    )
    canon.add_argument(
        "--max-length",
        type=_positive,
        default=None,
        metavar="BYTES",
        help="lines longer than this are bad lines (default: 65536)",
    )
    canon.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="worker processes (0: one per CPU; default: 1)",
    )
    canon.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="color --diff output (default: when stdout is a terminal)",
    )
    canon.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (shown on a terminal for inputs taking over 1 s)",
    )
    canon.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no summary on stderr (bad lines are still reported)",
    )
    canon.set_defaults(func=cmd_canon)


def _policy_options(parser: argparse.ArgumentParser) -> None:
    # No -p: in `urlsan proxy -p` it is mitmdump's port.
    parser.add_argument(
        "--profile",
        default="rfc3986",
        metavar="NAME",
        help=f"rule profile: {', '.join(PROFILES)} (default: rfc3986)",
    )
    parser.add_argument(
        "--rules",
        default="",
        metavar="SPEC",
        help="switch rules on and off: '+merge-slashes,-remove-dot-segments'",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (one per CPU) or more: {value}")
    return value or os.cpu_count() or 1


def make_policy(profile: str, rules: str) -> Policy:
    """The policy the options name; `UsageError` for an unknown profile or rule."""
    try:
        policy = Policy.profile(profile)
        return policy.with_rules(rules) if rules else policy
    except ValueError as e:
        raise UsageError(str(e)) from None


class _Colors:
    def __init__(self, on: bool) -> None:
        self.head = "\x1b[1;36m" if on else ""
        self.minus = "\x1b[31m" if on else ""
        self.plus = "\x1b[32m" if on else ""
        self.reset = "\x1b[0m" if on else ""


def cmd_canon(args: argparse.Namespace) -> int:
    policy = make_policy(args.profile, args.rules)
    if args.urls and args.input:
        raise UsageError("give URLs as arguments or with -i FILE, not both")
    if args.json:
        detail = batch.Detail.JSON
    elif args.diff or args.check:
        detail = batch.Detail.RULES
    else:
        detail = batch.Detail.URL
    canon = batch.Canonicalizer(policy, detail, args.form)
    max_bytes = args.max_length or batch.MAX_LINE_BYTES

    source = "argv" if args.urls else (args.input or "-")
    name = {"argv": "argument", "-": "<stdin>"}.get(source, source)
    stream: IO[bytes] | None = None
    lines: Iterator[batch.Line]
    if args.urls:
        lines = batch.lines_from_args(args.urls)
    else:
        try:
            stream = batch.open_input(source)
        except OSError as e:
            raise UsageError(f"cannot read {source}: {e.strerror or e}") from None
        lines = batch.read_lines(stream, max_bytes)
    try:
        out = batch.open_output(args.output)
    except OSError as e:
        raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None

    colors = _Colors(
        args.color == "always"
        or (
            args.color == "auto"
            and args.diff
            and _isatty(sys.stdout)
            and "NO_COLOR" not in os.environ
            and args.output == "-"
        )
    )
    size, position = batch.input_size(stream) if stream is not None else (None, None)
    progress = batch.Progress(
        sys.stderr,
        size,
        position,
        enabled=stream is not None and not args.no_progress and _isatty(sys.stderr),
    )
    err = sys.stderr
    write = out.write
    seen: dict[bytes, int] = {}
    total = valid = changed = offenders = collapsed = bad = 0
    skip = args.on_error == "skip"
    to_stdout = args.output == "-"
    # The common case, plain URLs out and nothing to count, writes a chunk at a time.
    plain = not (args.json or args.diff or args.check or args.dedupe)
    try:
        for chunk, outcomes in batch.run_chunks(batch.chunked(lines), canon, args.jobs):
            if plain and len(outcomes) == len(chunk):
                urls = [url for url, _ in outcomes]
                if None not in urls:
                    text = "\n".join(cast(list[str], urls))
                    write(text.encode("utf-8", "surrogateescape") + b"\n")
                    total += len(chunk)
                    valid += len(chunk)
                    progress.update(total)
                    continue
            results = iter(outcomes)
            for line in chunk:
                total += 1
                url: str | None
                payload: Any
                if line.text is None:
                    url, payload = None, line.error
                else:
                    url, payload = next(results)
                if url is None:
                    bad += 1
                    progress.close()
                    if to_stdout:  # on a terminal, the report comes after the lines before it
                        out.flush()
                    err.write(f"urlsan canon: {name}:{line.number}: {payload}\n")
                    if skip or args.diff or args.check:
                        continue
                    if args.json:
                        obj: dict[str, Any] = {
                            "input": line.raw.decode("utf-8", "backslashreplace"),
                            "url": None,
                            "edits": [],
                            "findings": [],
                            "error": payload,
                        }
                        write(json.dumps(obj, ensure_ascii=False).encode() + b"\n")
                    else:
                        write(line.raw + b"\n")
                    continue
                valid += 1
                text = line.text or ""
                is_changed = url != text
                changed += is_changed
                if args.dedupe:
                    key = batch.digest(url)
                    first = seen.get(key)
                    if first is not None:
                        collapsed += 1
                        if args.check:
                            offenders += 1
                            if args.json:
                                obj = {**json.loads(payload), "duplicate_of": first}
                                write(json.dumps(obj, ensure_ascii=False).encode() + b"\n")
                            else:
                                line_out = f"{name}:{line.number}: duplicate of line {first}"
                                write(
                                    f"{line_out}: {_shown(text)}\n".encode(
                                        "utf-8", "surrogateescape"
                                    )
                                )
                        continue
                    seen[key] = line.number
                if args.check:
                    if not is_changed:
                        continue
                    offenders += 1
                    if args.json:
                        write(payload.encode() + b"\n")
                    elif args.diff:
                        write(_diff(line.number, text, url, payload, colors))
                    else:
                        rules = ", ".join(payload)
                        line_out = f"{name}:{line.number}: {rules}: {_shown(text)}"
                        write(f"{line_out} -> {_shown(url)}\n".encode("utf-8", "surrogateescape"))
                elif args.diff:
                    if is_changed:
                        write(_diff(line.number, text, url, payload, colors))
                elif args.json:
                    write(payload.encode() + b"\n")
                else:
                    write(url.encode() + b"\n")
            progress.update(total)
    finally:
        progress.close()
        if out is not sys.stdout.buffer:
            out.close()
        else:
            out.flush()
        if stream is not None and stream is not sys.stdin.buffer:
            stream.close()

    if not args.quiet:
        summary = []
        if args.check:
            summary.append(f"{offenders:,} of {valid:,} URLs not canonical")
        elif args.diff:
            summary.append(f"{changed:,} of {valid:,} URLs changed")
        if args.dedupe:
            summary.append(f"{len(seen):,} distinct, {collapsed:,} collapsed")
        if bad:
            fate = "skipped" if skip or args.diff or args.check else "passed through"
            summary.append(f"{bad:,} bad line{'s' * (bad != 1)} {fate}")
        if summary:
            err.write(f"urlsan canon: {total:,} line{'s' * (total != 1)}: {'; '.join(summary)}\n")
    if bad:
        return EXIT_BAD_LINES
    if args.check and offenders:
        return EXIT_OFFENDERS
    return EXIT_OK


def _diff(number: int, before: str, after: str, rules: tuple[str, ...], c: _Colors) -> bytes:
    return (
        f"{c.head}{number}: {', '.join(rules)}{c.reset}\n"
        f"{c.minus}- {_shown(before)}{c.reset}\n"
        f"{c.plus}+ {_shown(after)}{c.reset}\n"
    ).encode("utf-8", "surrogateescape")


# C0 and C1 controls and DEL, shown as \xNN: a URL in a list must not be able to drive the
# terminal it is displayed on (ESC sequences can rewrite the screen or the title).
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}


def _shown(text: str) -> str:
    return text.translate(_CONTROLS)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
