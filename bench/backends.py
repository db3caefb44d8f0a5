"""What reading a target as the servers behind the proxy read it costs: urlsan.core.backends.

    .venv/bin/python bench/backends.py [--rounds 5] [--targets 20000] [--corpus-dir ../shared/data]

Three sets of origin-form targets: ``clean`` (paths and queries of the kind most traffic has:
no ``%``, ``;``, ``\\``, ``//``, dot segment or non-ASCII byte; `backends.plain` decides them
in one match), ``real`` (the paths and queries of the real URLs of ``--corpus-dir``, as varied
as they come; the share of them that leaves the one-scan path is printed first) and
``divergent`` (tests/backends' corpus less its plain targets: every evasion family, byte
sweeps).  For each, microseconds per target (best of ``--rounds``) for:

- ``scan``: `backends.plain` alone;
- ``one``: `backends.read` for one server (nginx);
- ``all``: `backends.readings` for every modeled server;
- ``canonicalize``: `urlsan.core.canonicalize` of the same target, the work the proxy does
  already, for scale; the last columns give ``one`` and ``all`` as a share of it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests.backends.corpus, when run as a file

from corpus import load  # noqa: E402  (bench/corpus.py: this folder is on sys.path when run)

from tests.backends.corpus import corpus  # noqa: E402
from urlsan.core import backends, canonicalize  # noqa: E402


def clean_targets(n: int, rng: random.Random) -> list[bytes]:
    words = ["api", "v1", "users", "static", "img", "index.html", "app.js", "search", "a-b", "x_y"]
    out = []
    for _ in range(n):
        path = "/" + "/".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
        query = (
            f"?id={rng.randint(0, 10**6)}&page={rng.randint(1, 50)}" if rng.random() < 0.5 else ""
        )
        out.append((path + query).encode())
    assert all(backends.plain(t) for t in out)
    return out


def best(fn: Callable[[bytes], object], targets: list[bytes], rounds: int) -> float:
    """Microseconds per target, best of ``rounds`` passes."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for t in targets:
            fn(t)
        times.append(time.perf_counter() - start)
    return min(times) / len(targets) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--targets", type=int, default=20000)
    parser.add_argument("--corpus-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    rng = random.Random(0)
    divergent = [t for t in corpus() if not backends.plain(t)]
    real = [
        backends.origin_form(u).encode("utf-8", "surrogateescape")
        for u in load(args.corpus_dir)
        if u[:4].lower() == "http"
    ]
    slow = sum(not backends.plain(t) for t in real)
    print(
        f"real traffic: {slow:,} of the {len(real):,} targets of {args.corpus_dir.name}'s URLs "
        f"({slow / len(real):.2%}) leave the one-scan path and run through the models"
    )
    sets = {
        "clean": clean_targets(args.targets, rng),
        "real": real[: args.targets],
        "divergent": (divergent * (args.targets // len(divergent) + 1))[: args.targets],
    }
    names = len(backends.NAMES)
    print(f"microseconds per target, best of {args.rounds}; 'all' is {names} servers")
    head = f"{'set':<11}{'scan':>8}{'one':>8}{'all':>8}{'canonicalize':>14}{'one/canon':>11}"
    print(head + f"{'all/canon':>11}")
    for name, targets in sets.items():
        scan = best(backends.plain, targets, args.rounds)
        one = best(lambda t: backends.read(t, "nginx"), targets, args.rounds)
        every = best(backends.readings, targets, args.rounds)
        canon = best(
            lambda t: canonicalize(t.decode("utf-8", "surrogateescape")), targets, args.rounds
        )
        print(
            f"{name:<11}{scan:>8.2f}{one:>8.2f}{every:>8.2f}{canon:>14.2f}"
            f"{one / canon:>10.0%}{every / canon:>11.0%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
