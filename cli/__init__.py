"""urlsan.cli — the `urlsan` command: ``canon`` (with its batch engine), ``report``, ``rules``
and ``proxy`` (the mitmproxy launcher, imported only when asked for).  Entry point: `main`."""

from .main import main

__all__ = ["main"]
