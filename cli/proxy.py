"""``urlsan proxy [mitmdump arguments]``: mitmdump with the urlsan addon loaded."""

from __future__ import annotations

import sys
from typing import Any

MISSING_MITMPROXY = "urlsan proxy needs mitmproxy: pip install 'urlsan[proxy]'"
DEFAULT_LISTEN_HOST = "127.0.0.1"


def _names_listen_host(argv: list[str]) -> bool:
    """Whether the user chose where to listen (otherwise: loopback only, not every interface)."""
    for i, arg in enumerate(argv):
        if arg == "--listen-host" or arg.startswith("--listen-host="):
            return True
        setting = arg[len("--set=") :] if arg.startswith("--set=") else None
        if arg == "--set" and i + 1 < len(argv):
            setting = argv[i + 1]
        if setting is not None and setting.startswith("listen_host="):
            return True
    return False


def mitmdump_args(argv: list[str]) -> list[str]:
    """The mitmdump command line for ``urlsan proxy argv``."""
    if _names_listen_host(argv):
        return list(argv)
    # mitmproxy listens on every interface by default; an open proxy is not a safe default.
    # Port 8080 is mitmproxy's own default; -p and --mode ...@port override it.
    return ["--listen-host", DEFAULT_LISTEN_HOST, *argv]


def _filter_options(args: Any) -> dict[str, str]:
    # What mitmdump does with its positional filter expression (mitmproxy.tools.main.mitmdump).
    if args.filter_args:
        v = " ".join(args.filter_args)
        return {"save_stream_filter": v, "readfile_filter": v, "dumper_filter": v}
    return {}


def proxy_main(argv: list[str]) -> int:
    """Run mitmdump with the addon until it is stopped; the exit code for ``urlsan proxy``."""
    try:
        from mitmproxy.tools import cmdline, dump, main
    except ImportError:
        print(MISSING_MITMPROXY, file=sys.stderr)
        return 2
    from ..addon.sanitizer import UrlSanitizer

    class UrlsanDumpMaster(dump.DumpMaster):  # type: ignore[misc]
        # Added before the command line is parsed, so that --set urlsan_* works and a bad value
        # is mitmproxy's one-line option error, exactly as for a built-in addon.
        def __init__(self, options: Any, **kwargs: Any) -> None:
            super().__init__(options, **kwargs)
            self.addons.add(UrlSanitizer())  # type: ignore[no-untyped-call]

    try:
        main.run(UrlsanDumpMaster, cmdline.mitmdump, mitmdump_args(argv), _filter_options)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(proxy_main(sys.argv[1:]))
