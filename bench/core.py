"""Throughput of `urlsan.core.canonicalize` against its peers, measured in one process.

    .venv/bin/python bench/core.py [--rounds 5] [--corpus-dir ../shared/data]
                                   [--only throughput|declines|growth ...]

Three tables: throughput against the peers; the share of targets the compiled twin declines
(hands to the Python driver), by the reason `_speedups.declined()` gives; and time, peak memory
and edit count against input length for hostile shapes, 1 KB to 4 MB (issue #13).

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
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from urlsan.core import Policy, canonicalize, compiled
from urlsan.core.accel import twin_flags

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


def python_only(url: str) -> str:
    """``canonicalize`` as it runs without the compiled twin (URLSAN_NO_EXTENSIONS, or no
    compiler): the fast path, then the driver.  The twin is set aside for the one call (two
    module attribute writes, tens of nanoseconds)."""
    twin, compiled.twin = compiled.twin, None
    try:
        return canonicalize(url).url
    finally:
        compiled.twin = twin


def contenders() -> dict[str, Callable[[str], object]]:
    found: dict[str, Callable[[str], object]] = {"urlsan": lambda u: canonicalize(u).url}
    if compiled.twin is not None:
        found["urlsan (Python)"] = python_only
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


def decline_table(sets: dict[str, list[str]]) -> None:
    """The share of each set the compiled twin hands back to the Python driver, by reason."""
    twin, why = compiled.twin, compiled.declined
    if twin is None or why is None:
        return
    for policy_name in ("default", "crawler"):
        policy = Policy() if policy_name == "default" else Policy.profile("crawler")
        flags = twin_flags(policy)
        reasons: dict[str, dict[str, int]] = {name: {} for name in sets}
        for set_name, urls in sets.items():
            counts = reasons[set_name]
            for u in urls:
                if flags < 0:
                    reason: str | None = "policy not served"
                else:
                    reason = None if twin(u, flags, "auto") is not None else why() or "?"
                key = reason or "handled"
                counts[key] = counts.get(key, 0) + 1
        keys = sorted({k for c in reasons.values() for k in c}, key=lambda k: (k != "handled", k))
        print(f"\nshare the compiled twin handles or declines, by reason ({policy_name} policy)")
        print(f"{'reason':<46}" + "".join(f"{n:>18}" for n in sets))
        for key in keys:
            shares = [(reasons[n].get(key, 0), max(len(sets[n]), 1)) for n in sets]
            cells = [f"{k} {100 * k / total:6.2f}%" for k, total in shares]
            print(f"{key[:45]:<46}" + "".join(f"{c:>18}" for c in cells))


SHAPES = ("%", "\x01%", "%00", "../", "é", "%41", "%00%0d", "a/")
SIZES = (1_000, 10_000, 100_000, 1_000_000, 4_000_000)


def growth_table() -> None:
    """Time and peak memory against input length: linear growth, also for the worst shapes.

    Memory is tracemalloc's peak during one call (the input itself excluded), and includes the
    Result: its URL and its edits."""
    print("\ntime per origin-form target '/' + shape * n against its length (ms, median of 3-20),")
    print("peak traced memory in MB, and the number of edits in the Result")
    head = "".join(f"{_size(n):>24}" for n in SIZES)
    print(f"{'shape':<9}{head}")
    for unit in SHAPES:
        cells = []
        for size in SIZES:
            target = "/" + unit * (size // len(unit))
            samples = []
            for _ in range(3 if size >= 100_000 else 20):
                t0 = time.perf_counter()
                canonicalize(target)
                samples.append(time.perf_counter() - t0)
            tracemalloc.start()
            result = canonicalize(target)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            ms = statistics.median(samples) * 1000
            cells.append(f"{ms:>8.2f} {peak / 1e6:>6.1f}M {len(result.edits):>7}")
            del result
        print(f"{ascii(unit)[1:-1]:<9}" + "".join(f"{c:>24}" for c in cells))


def _size(n: int) -> str:
    return f"{n // 1_000_000} MB" if n >= 1_000_000 else f"{n // 1000} KB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpus-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument(
        "--only",
        choices=("throughput", "declines", "growth"),
        action="append",
        help="print only this table (repeatable); default: all three",
    )
    args = parser.parse_args()
    only = set(args.only or ("throughput", "declines", "growth"))
    print(f"Python {sys.version.split()[0]}")
    twin = "loaded" if compiled.twin is not None else "not loaded (no compiler, or disabled)"
    print(f"compiled twin (core/_speedups.c): {twin}")
    if only & {"throughput", "declines"}:
        clean = load(args.corpus_dir)
        rng = random.Random(1)
        sets = {"clean": clean, "dirty": [dirty(u, rng) for u in clean]}
        print(f"{len(clean)} URLs from {', '.join(CORPORA)}")
    if "throughput" in only:
        best = throughput_table(sets, args.rounds)
    if "declines" in only:
        decline_table(sets)
    if "growth" in only:
        growth_table()
    if "throughput" in only:
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
