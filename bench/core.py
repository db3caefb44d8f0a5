"""Throughput of `urlsan.core.canonicalize` against its peers, measured in one process.

    .venv/bin/python bench/core.py [--rounds 5] [--corpus-dir ../shared/data]

Corpora: ada-kasztp.txt and ada-userbait.txt from ada-url/url-various-datasets (~59k real URLs),
read from ../shared/data (not shipped with the repository).  "dirty" is the same list made
non-canonical by a seeded generator: random case of scheme and host, escapes of unreserved
characters, dot segments, default ports and raw non-ASCII.  Rounds interleave the contenders so
that drift of the machine hits all alike; the best round counts.  Targets (issue #2): urlsan at
least 2x ada on clean URLs, and at least 0.5x ada on dirty ones.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from urlsan.core import Policy, canonicalize, compiled

HERE = Path(__file__).resolve().parent
CORPORA = ("ada-kasztp.txt", "ada-userbait.txt")


def load(corpus_dir: Path) -> list[str]:
    urls: list[str] = []
    for name in CORPORA:
        path = corpus_dir / name
        if not path.exists():
            sys.exit(f"corpus {path} is missing: pass --corpus-dir (see shared/data/SOURCES.md)")
        with path.open(encoding="utf-8", errors="surrogateescape") as f:
            urls += [line.rstrip("\r\n").lstrip("\ufeff") for line in f]
    return [u for u in urls if u]


def dirty(url: str, rng: random.Random) -> str:
    """Make a URL non-canonical in the ways RFC 3986 §6.2 lets a canonicalizer undo."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    host = "".join(c.upper() if rng.random() < 0.5 else c for c in host)
    scheme = scheme.upper() if rng.random() < 0.5 else scheme
    if ":" not in host and rng.random() < 0.5:
        host += ":443" if scheme.lower() == "https" else ":80"
    chars = []
    for c in path:
        r = rng.random()
        if c.isalnum() and r < 0.1:
            chars.append(f"%{ord(c):02x}")  # an escape of an unreserved character
        else:
            chars.append(c)
    path = "".join(chars)
    if rng.random() < 0.5:
        path = "a/./b/../" + path
    if rng.random() < 0.3:
        path += "/é"
    return f"{scheme}://{host}{slash or '/'}{path}"


def python_only() -> Policy:
    """The default policy with the compiled twin switched off, as URLSAN_NO_EXTENSIONS does."""
    policy = Policy()
    object.__setattr__(policy, "compiled", -1)
    return policy


def contenders() -> dict[str, Callable[[str], object]]:
    found: dict[str, Callable[[str], object]] = {"urlsan": lambda u: canonicalize(u).url}
    if compiled.twin is not None:
        pure = python_only()
        found["urlsan (Python)"] = lambda u: canonicalize(u, pure).url
    try:
        import ada_url

        def ada(u: str) -> object:
            try:
                return ada_url.URL(u).href
            except ValueError:
                return None

        found["ada_url"] = ada
    except ImportError:
        pass
    try:
        import url as url_py

        def rust_url(u: str) -> object:
            try:
                return str(url_py.URL.parse(u))
            except (url_py.URLError, ValueError):
                return None

        found["url-py"] = rust_url
    except ImportError:
        pass
    try:
        from w3lib.url import canonicalize_url

        found["w3lib"] = canonicalize_url
    except ImportError:
        pass
    try:
        from url_normalize import url_normalize

        found["url-normalize"] = url_normalize
    except ImportError:
        pass
    return found


def run(fn: Callable[[str], object], urls: list[str]) -> float:
    """Seconds for one pass; exceptions of the slower peers count as done work."""
    gc.collect()
    t0 = time.perf_counter()
    for u in urls:
        with contextlib.suppress(Exception):
            fn(u)
    return time.perf_counter() - t0


def throughput_table(sets: dict[str, list[str]], rounds: int) -> dict[tuple[str, str], float]:
    found = contenders()
    best: dict[tuple[str, str], float] = {}
    for _ in range(rounds):
        for set_name, urls in sets.items():
            for name, fn in found.items():
                if name in ("w3lib", "url-normalize") and len(urls) > 20000:
                    urls = urls[:20000]  # the pure-Python peers are slow: a sample suffices
                rate = len(urls) / run(fn, urls)
                best[(set_name, name)] = max(best.get((set_name, name), 0.0), rate)
    names = list(found)
    print(f"\nthroughput, URLs/s (best of {rounds} interleaved rounds)")
    print(f"{'set':<8}" + "".join(f"{n:>17}" for n in names) + f"{'urlsan/ada':>12}")
    for set_name in sets:
        row = [best[(set_name, n)] for n in names]
        ratio = best[(set_name, "urlsan")] / best.get((set_name, "ada_url"), float("nan"))
        print(f"{set_name:<8}" + "".join(f"{r:>17,.0f}" for r in row) + f"{ratio:>11.2f}x")
    return best


def growth_table() -> None:
    """Time against input length: linear growth, also for the worst shapes."""
    shapes = {
        "%": "%",
        "../": "../",
        "%41": "%41",
        "é": "é",
        "a/": "a/",
    }
    print("\ntime per target against length (ms); linear growth means the ratio column ~10")
    print(f"{'shape':<8}{'1 KB':>10}{'10 KB':>10}{'100 KB':>10}{'1 MB':>10}{'1MB/100KB':>11}")
    for label, unit in shapes.items():
        times = []
        for size in (1_000, 10_000, 100_000, 1_000_000):
            target = "/" + unit * (size // len(unit))
            samples = []
            for _ in range(3 if size >= 100_000 else 20):
                t0 = time.perf_counter()
                canonicalize(target)
                samples.append(time.perf_counter() - t0)
            times.append(statistics.median(samples) * 1000)
        print(
            f"{label:<8}" + "".join(f"{t:>10.2f}" for t in times) + f"{times[3] / times[2]:>10.1f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    args = parser.parse_args()
    clean = load(args.corpus_dir)
    rng = random.Random(1)
    sets = {"clean": clean, "dirty": [dirty(u, rng) for u in clean]}
    print(f"{len(clean)} URLs from {', '.join(CORPORA)}; Python {sys.version.split()[0]}")
    twin = "loaded" if compiled.twin is not None else "not loaded (no compiler, or disabled)"
    print(f"compiled twin (core/_speedups.c): {twin}")
    best = throughput_table(sets, args.rounds)
    growth_table()
    clean_ratio = best[("clean", "urlsan")] / best.get(("clean", "ada_url"), float("inf"))
    dirty_ratio = best[("dirty", "urlsan")] / best.get(("dirty", "ada_url"), float("inf"))
    ok = clean_ratio >= 2.0 and dirty_ratio >= 0.5
    print(
        f"\ntargets: clean >= 2x ada ({clean_ratio:.2f}x), dirty >= 0.5x ada "
        f"({dirty_ratio:.2f}x): {'met' if ok else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
