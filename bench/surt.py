"""SURT keys per second: `urlsan.core.surt` (both profiles) against the `surt` package.

    .venv/bin/python bench/surt.py [--count 20000] [--rounds 5] [--corpus-dir ../shared/data]

``--count`` distinct real URLs of the ada corpora (bench/corpus.py; a seeded sample), each keyed
once per pass: no URL repeats within a pass, so that no key is seen warm from an earlier
occurrence of the same URL.  CPU seconds of this one process; the four loops interleaved round
by round (a shared machine's load then weighs on all of them alike), the best of ``--rounds``
counting.  The ratios are against the `surt` package's ``surt.surt(u)`` on the same URLs.  It
prints first the share of the URLs that the ia profile's short path (``ia_plain`` in C where
urlsan.core._columns is built) leaves to the full steps, each of which costs many times a key
of the short path.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
# This script's own name would shadow the surt package: bench/ leaves sys.path while it is
# imported, and comes back for bench/corpus.py.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
import surt as reference  # noqa: E402

sys.path.insert(0, str(HERE))
from archive import best  # noqa: E402  # bench/archive.py: the runs interleaved, best CPU s
from corpus import load  # noqa: E402  # bench/corpus.py


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--count", type=int, default=20_000, help="distinct URLs (default 20,000)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds; the best counts")
    args = parser.parse_args(argv)

    from urlsan.core import surt
    from urlsan.core.surt import _short  # the short path: C where built

    distinct = sorted(set(load(args.corpus_dir)))
    urls = random.Random(11).sample(distinct, min(args.count, len(distinct)))
    rows: list[tuple[str, Callable[[], object]]] = [
        ("surt package: surt.surt(u)", lambda: [reference.surt(u) for u in urls]),
        ("urlsan: surt(u) (ia profile)", lambda: [surt(u) for u in urls]),
        ("urlsan: surt(u, profile='urlsan')", lambda: [surt(u, profile="urlsan") for u in urls]),
    ]
    n = len(urls)
    full = sum(_short(u) is None for u in urls)
    print(f"ia profile: {full:,} of the URLs ({100 * full / n:.2f}%) take the full steps")
    print(f"SURT keys: {n:,} distinct real URLs, CPU seconds of one core, best of {args.rounds}")
    print(f"{'path':36} {'URLs/s':>12} {'vs surt':>9}")
    seconds = best([run for _, run in rows], args.rounds)
    for (name, _), took in zip(rows, seconds, strict=True):
        print(f"{name:36} {n / took:12,.0f} {seconds[0] / took:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
