"""``urlsan proxy [mitmdump arguments]``: mitmdump with the urlsan addon loaded."""

from __future__ import annotations

import ctypes
import os
import sys
import textwrap
from typing import Any

# Into the Python that runs urlsan (a venv without a pip of its own, or a second Python, would
# otherwise take it), and as a package an index has: urlsan itself is on none.
MISSING_MITMPROXY = (
    "urlsan proxy needs mitmproxy 11 or 12: "
    f"{sys.executable} -m pip install 'mitmproxy>=11.0.2,<13'"
)
DEFAULT_LISTEN_HOST = "127.0.0.1"
# The audit log unless --set urlsan_log=... names another file (or none: urlsan_log=).
DEFAULT_LOG = "urlsan-audit.jsonl"
PROG = "urlsan proxy"  # how mitmproxy's own messages name the command
HELP_FLAGS = frozenset({"-h", "--help"})
USAGE = "usage: urlsan proxy [mitmdump options] [filter]"
DESCRIPTION = (
    "mitmdump with the urlsan addon loaded: every request-target is canonicalized (RFC 3986), "
    f"audited or rejected, and each change is written to an audit log ({DEFAULT_LOG} in the "
    "current directory unless --set urlsan_log=FILE names another; --set urlsan_log= keeps "
    f"none). Listens on {DEFAULT_LISTEN_HOST}:8080 unless --listen-host, --set "
    "listen_host=..., -p or --mode ...@port say otherwise."
)
MORE = (
    "Every mitmdump option works too (-p, --mode, --set, ...): see `mitmdump --help` and "
    "`mitmdump --options`."
)


class _Loader:
    """Records the options an addon's ``load`` adds: its help, without starting mitmproxy."""

    def __init__(self) -> None:
        self.options: list[tuple[str, Any, str, Any]] = []

    def add_option(
        self, name: str, typespec: Any, default: Any, help: str, choices: Any = None
    ) -> None:
        self.options.append((name, default, help, choices))


def _default(value: Any) -> str:
    if value is None or value == "" or value == [] or value == ():
        return "(none)"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def help_text(addon: Any) -> str:
    """``urlsan proxy --help``: usage, the urlsan options with their help, and where the rest is."""
    loader = _Loader()
    addon.load(loader)
    wrap = textwrap.TextWrapper(
        width=79, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
    )
    para = textwrap.TextWrapper(width=79, break_on_hyphens=False)
    lines = [USAGE, "", *para.wrap(DESCRIPTION), "", "urlsan options (--set name=value):"]
    for name, default, text, choices in loader.options:
        if name == "urlsan_log":
            default = DEFAULT_LOG  # what urlsan proxy sets; the addon alone keeps none
        lines.append(f"  {name}")
        lines += wrap.wrap(f"Default: {_default(default)}.")
        if choices:
            lines += wrap.wrap(f"One of: {', '.join(choices)}.")
        lines += wrap.wrap(text)
    lines += ["", *para.wrap(MORE)]
    return "\n".join(lines) + "\n"


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
# Above asyncio's socket reads (each recv allocates max_size, 256 KiB, and shrinks it to what
# came): below that, every read of every connection could be an mmap, page faults and a munmap.
MMAP_THRESHOLD = 512 * 1024
# Twice the mmap threshold, as glibc keeps it while it moves the threshold itself.  A fixed
# mmap threshold leaves the trim threshold at its initial 128 KiB: each 256 KiB read buffer,
# shrunk, left that much free at the top of the heap, which was given back to the system and
# taken again (page faults) on the next read.
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD


def return_large_blocks() -> None:
    """Have glibc give blocks of 512 KiB or more back to the system as soon as they are freed.

    glibc raises its mmap threshold to the size of each large block freed (up to 32 MiB), and
    serves later ones from its heaps, which keep the memory: a proxy that has handled hostile
    megabyte targets then stays 50 MiB larger (bench/proxy.py --scenario memory).  A fixed
    threshold keeps it flat.  glibc's initial 128 KiB did too, but then asyncio's 256 KiB read
    buffers were mapped and unmapped on each read whenever the heap had no free 256 KiB at hand
    (a proxy whose heap was laid out so took 4 page faults and 35-55 µs more system CPU per
    request on bench/proxy.py's 50%-dirty mix).  The trim threshold goes with it
    (`TRIM_THRESHOLD`): left at 128 KiB, a read cost a page fault (mitmdump: 2 per request,
    +3% CPU).  Nothing happens without glibc; a threshold set in the environment
    (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_) is left as it is.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows)
        return
    for param, value, variable in (
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_"),
        (M_TRIM_THRESHOLD, TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_"),
    ):
        if variable not in os.environ:
            mallopt(param, value)


def _sets(argv: list[str], option: str) -> bool:
    """Whether ``argv`` sets ``option`` (``--set option=...``)."""
    for i, arg in enumerate(argv):
        setting = arg[len("--set=") :] if arg.startswith("--set=") else None
        if arg == "--set" and i + 1 < len(argv):
            setting = argv[i + 1]
        if setting is not None and setting.startswith(f"{option}="):
            return True
    return False


def _names_listen_host(argv: list[str]) -> bool:
    """Whether the user chose where to listen (otherwise: loopback only, not every interface)."""
    if any(arg == "--listen-host" or arg.startswith("--listen-host=") for arg in argv):
        return True
    return _sets(argv, "listen_host")


def mitmdump_args(argv: list[str]) -> list[str]:
    """The mitmdump command line for ``urlsan proxy argv``."""
    first = []
    if not _names_listen_host(argv):
        # mitmproxy listens on every interface by default; an open proxy is not a safe default.
        # Port 8080 is mitmproxy's own default; -p and --mode ...@port override it.
        first += ["--listen-host", DEFAULT_LISTEN_HOST]
    if not _sets(argv, "urlsan_log"):
        first += ["--set", f"urlsan_log={DEFAULT_LOG}"]  # every rewrite logged, unless told
    return [*first, *argv]


def _filter_options(args: Any) -> dict[str, str]:
    # What mitmdump does with its positional filter expression (mitmproxy.tools.main.mitmdump).
    if args.filter_args:
        v = " ".join(args.filter_args)
        return {"save_stream_filter": v, "readfile_filter": v, "dumper_filter": v}
    return {}


def _checked_options(options: Any, error: type[Exception]) -> Any:
    """mitmdump's extra option step (run once the options are parsed, before anything
    listens), which also refuses a misspelt urlsan option instead of keeping it aside unused."""
    from ..addon.sanitizer import known_options, unknown_options

    def extra(args: Any) -> dict[str, str]:
        mistakes = unknown_options(options.deferred, known_options(options))
        if mistakes:
            raise error("; ".join(mistakes))
        return _filter_options(args)

    return extra


def proxy_main(argv: list[str]) -> int:
    """Run mitmdump with the addon until it is stopped; the exit code for ``urlsan proxy``."""
    try:
        from mitmproxy.tools import cmdline, dump, main
    except ImportError:
        print(MISSING_MITMPROXY, file=sys.stderr)
        return 2
    from mitmproxy import exceptions

    from ..addon.sanitizer import UrlSanitizer

    if HELP_FLAGS & set(argv):
        # mitmdump's own --help knows nothing of the addon's options, and exits 1 here.
        sys.stdout.write(help_text(UrlSanitizer()))
        return 0

    extra: list[Any] = []
    addon = UrlSanitizer()

    class UrlsanDumpMaster(dump.DumpMaster):  # type: ignore[misc]
        # Added before the command line is parsed, so that --set urlsan_* works and a bad value
        # is mitmproxy's one-line option error, exactly as for a built-in addon.
        def __init__(self, options: Any, **kwargs: Any) -> None:
            super().__init__(options, **kwargs)
            self.addons.add(addon)  # type: ignore[no-untyped-call]
            extra.append(_checked_options(options, exceptions.OptionsError))

    return_large_blocks()
    # mitmproxy names the command by sys.argv[0] in its usage line and errors: "urlsan proxy",
    # not the executable's path.
    argv0, sys.argv[0] = sys.argv[0], PROG
    try:
        main.run(UrlsanDumpMaster, cmdline.mitmdump, mitmdump_args(argv), lambda a: extra[0](a))
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    finally:
        sys.argv[0] = argv0
        if not addon.started:  # refused before it served: no empty log left behind
            addon.discard_log()
    return 0


if __name__ == "__main__":
    sys.exit(proxy_main(sys.argv[1:]))
