"""The real URLs the benchmarks measure on: the ada corpora of ``../shared/data`` (59,440 URLs
from real pages), read once by every script of bench/ the same way.

    from corpus import load   # bench/ is on sys.path when a script of it runs
"""

from __future__ import annotations

import sys
from pathlib import Path

CORPORA = ("ada-kasztp.txt", "ada-userbait.txt")


def load(corpus_dir: Path, repeat: int = 1) -> list[str]:
    """Every non-empty line of the corpora in ``corpus_dir``, ``repeat`` times over; exits
    with a message naming the missing file."""
    urls: list[str] = []
    for name in CORPORA:
        path = corpus_dir / name
        if not path.exists():
            sys.exit(f"corpus {path} is missing: pass --corpus-dir (see shared/data/SOURCES.md)")
        with path.open(encoding="utf-8", errors="surrogateescape") as f:
            urls += [line.rstrip("\r\n").lstrip("\ufeff") for line in f]
    return [u for u in urls if u] * repeat
