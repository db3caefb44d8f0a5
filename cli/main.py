"""The `urlsan` command: ``canon`` (batch canonicalization), ``audit`` (recorded traffic),
``report`` (audit-log summaries), ``rules`` (the rule table) and ``proxy`` (the mitmproxy addon;
imported only when asked for).

Exit statuses (docs/cli.md):
  0  done, nothing to report
  1  ``canon --check``: some input is not canonical (or a duplicate, with ``--dedupe``)
  2  usage: unknown option, profile or rule; an input or output that cannot be opened
  3  bad lines (empty, not UTF-8, too long, refused by the policy): reported on stderr, then
     passed through or skipped as ``--on-error`` says; for ``report``, an input that is no
     audit log
  4  ``canon``: the output could not be written (disk full)
  5  ``canon --jobs``: a worker process died
  130 interrupted; 141 the reader of standard output went away (``| head``)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from .._about import warn_if_no_twin
from .status import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE, UsageError

# Into the Python that runs urlsan (a venv without a pip of its own, or a second Python, would
# otherwise take it), and as a package an index has: urlsan itself is on none.
PROXY_NEEDS = (
    "urlsan proxy needs mitmproxy 11 or 12: "
    f"{sys.executable} -m pip install 'mitmproxy>=11.0.2,<13'"
)

# The subcommands, each a module with add_parser(sub), in the order --help lists them.  Only the
# one a command line names is imported: `urlsan canon` starts without the audit reader's and
# the report's imports (a third of its start-up).
COMMANDS = ("canon", "report", "audit", "rules", "probe")


class _Version(argparse.Action):
    """``--version``: urlsan's, Python's and mitmproxy's, and which canonicalizer runs (several
    lines, which argparse's own version action would fold into one)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            help="show versions and which canonicalizer runs, and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from .._about import version_report

        print(version_report())
        parser.exit()


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, which gets the terminal's width from shutil: importing it
    (and bz2 and lzma with it) was 4 ms of every command's start-up, help or not, since
    argparse builds a formatter for each option it adds."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:  # as shutil.get_terminal_size() finds it; argparse keeps 2 spare
            width = _columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _columns() -> int:
    with contextlib.suppress(ValueError):
        if int(os.environ.get("COLUMNS", "0")) > 0:
            return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser with `_Formatter`; the subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``command`` alone when it is one of them."""
    parser = _Parser(
        prog="urlsan",
        description="RFC 3986 URL canonicalization: batch, audit-log reports, and a proxy.",
        epilog="Exit statuses: 0 ok, 1 --check found offenders, 2 usage, 3 bad lines, "
        "4 output not written, 5 a --jobs worker died. `urlsan COMMAND --help` shows a "
        "command's options.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in (command,) if command in COMMANDS else COMMANDS:
        importlib.import_module(f".{name}", __package__).add_parser(sub)
    sub.add_parser(
        "proxy",
        help="run the sanitizing proxy (mitmdump with the urlsan addon; needs urlsan[proxy])",
        add_help=False,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "proxy":
        return proxy(args_list[1:])
    parser = build_parser(args_list[0] if args_list else None)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as e:  # argparse: --help and --version exit 0, mistakes exit 2
        return int(e.code or 0)
    if args.command == "canon":
        warn_if_no_twin()
    try:
        return int(args.func(args))
    except UsageError as e:
        print(f"urlsan {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`urlsan canon big.txt | head`): no traceback, and no second
        # error when Python flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def proxy(argv: list[str]) -> int:
    """``urlsan proxy ARGS``: the addon's own command line, imported only now."""
    try:
        from .proxy import proxy_main
    except ImportError as e:
        if (e.name or "").split(".")[0] == "mitmproxy":
            print(PROXY_NEEDS, file=sys.stderr)
        else:
            print(f"urlsan proxy is not available: {e}", file=sys.stderr)
        return EXIT_USAGE
    warn_if_no_twin()
    return int(proxy_main(argv))


if __name__ == "__main__":
    sys.exit(main())
