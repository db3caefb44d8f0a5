"""Throughput of `urlsan.core.canonicalize` against its peers, measured in one process.

    .venv/bin/python bench/core.py [--rounds 5] [--corpus-dir ../shared/data]
                                   [--only throughput|declines|growth ...]

Three tables: throughput against the peers; the share of targets the compiled twin declines
(hands to the Python driver), by the reason `_speedups.declined()` gives; and time, peak memory
and edit count against input length for hostile shapes, 1 KB to 4 MB (issue #13).

Corpora: ada-kasztp.txt and ada-userbait.txt from ada-url/url-various-datasets (~59k real URLs),
read from ../shared/data (not shipped with the repository).  "dirty" is the same list made
non-canonical by a seeded generator (`dirty`: the kinds of RFC 3986 §6.2.2-6.2.3, plus userinfo
and IP literals); the declines table adds "proxy targets", the dirty list in the forms a proxy
receives (`request_target`: origin, absolute, authority and asterisk form).  Rounds interleave
the contenders so that drift of the machine hits all alike; the best round counts.  Targets
(issue #13): clean at least 1.3x url-py, dirty at least 1.0x url-py and 3x ada.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from corpus import CORPORA, load  # bench/corpus.py: this folder is on sys.path when run

from urlsan.core import Policy, canonicalize, compiled
from urlsan.core.canonical import twin_flags

HERE = Path(__file__).resolve().parent


def dirty(url: str, rng: random.Random) -> str:
    """Make a URL non-canonical in the ways RFC 3986 §6.2.2-6.2.3 lets a canonicalizer undo,
    and give it the shapes real traffic has that the corpora lack (userinfo, IP literals).

    Each rewrite is drawn on its own, so that one URL may carry several: random case of
    scheme and host; userinfo; an IPv4 or IPv6 literal (upper-case hex, sometimes a zone) for
    the host; a default, zero-padded, empty or other port; escapes of unreserved characters in
    lower-case hex; lower-case hex in reserved escapes; ``%2e``/``%2E`` dot segments and plain
    ones; raw excluded characters (space, ``"<>|^`{}``); raw UTF-8; an empty path."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, _, path = rest.partition("/")
    hostport = authority.rpartition("@")[2]
    host, colon, port = hostport.partition(":")
    scheme = _case(scheme, rng) if rng.random() < 0.5 else scheme
    host = _host(host, rng)
    port = _port(scheme, port if colon else "", rng)
    userinfo = _userinfo(rng) if rng.random() < 0.1 else ""
    path = _path(path, rng)
    if not path and rng.random() < 0.5:
        return f"{scheme}://{userinfo}{host}{port}"  # the empty path (RFC 3986 §6.2.3)
    return f"{scheme}://{userinfo}{host}{port}/{path}"


def _case(text: str, rng: random.Random) -> str:
    return "".join(c.upper() if rng.random() < 0.5 else c for c in text)


def _host(host: str, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.05:
        return f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.1"
    if r < 0.08:
        return f"[2001:DB8::{rng.randrange(1, 0xFFFF):X}]"  # RFC 3986 §6.2.2.1: hex case
    if r < 0.09:
        return "[FE80::1%25Eth0]"  # RFC 6874: a zone
    return _case(host, rng)


def _port(scheme: str, port: str, rng: random.Random) -> str:
    default = {"http": "80", "https": "443", "ws": "80", "wss": "443"}.get(scheme.lower(), "")
    r = rng.random()
    if r < 0.3 and default:
        return ":" + default
    if r < 0.4 and default:
        return ":0" + default  # leading zeros: the same port
    if r < 0.45:
        return ":"  # an empty port
    if r < 0.5:
        return ":8080"
    return f":{port}" if port else ""


def _userinfo(rng: random.Random) -> str:
    return rng.choice(("user@", "User:Pa%73s@", "a%7eb@", "anonymous:@"))


_EXCLUDED = ' "<>|^`{}'


def _path(path: str, rng: random.Random) -> str:
    chars = []
    for c in path:
        r = rng.random()
        if c.isalnum() and c.isascii() and r < 0.1:
            chars.append(f"%{ord(c):02x}")  # an escape of an unreserved character
        elif c == "/" and r < 0.02:
            chars.append("%2f/")  # a reserved escape in lower-case hex
        else:
            chars.append(c)
    path = "".join(chars)
    r = rng.random()
    if r < 0.3:
        path = "a/./b/../" + path
    elif r < 0.45:
        path = "a/%2e%2E/" + path  # RFC 3986 §6.2.2.3: escaped dot segments
    if rng.random() < 0.2:
        path += rng.choice(_EXCLUDED) + "x"
    if rng.random() < 0.3:
        path += "/é"
    return path


def request_target(url: str, rng: random.Random) -> str:
    """``url`` as a proxy receives it (RFC 9112 §3.2): mostly origin-form, some absolute-form,
    and the authority form of CONNECT and the asterisk form of OPTIONS now and then."""
    r = rng.random()
    rest = url.partition("://")[2]
    authority, slash, path = rest.partition("/")
    if r < 0.02:
        host = authority.rpartition("@")[2].partition(":")[0]
        return f"{host}:443"  # CONNECT
    if r < 0.025:
        return "*"  # OPTIONS *
    if r < 0.3:
        return url  # a forward proxy's absolute-form
    return slash + path if slash else "/"


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
    """Seconds for one pass; exceptions of the slower peers count as done work.

    A ``try`` costs nothing until something is raised (CPython 3.11's zero-cost exceptions);
    ``with contextlib.suppress()`` around each call cost 0.28 µs a URL more (Python 3.11; 0.37
    on 3.12), the same for every contender: more than urlsan spends on a clean URL, which drew
    every ratio towards 1."""
    gc.collect()
    t0 = time.perf_counter()
    for u in urls:
        try:
            fn(u)
        except Exception:  # a peer's refusal is its answer, timed as work done
            continue
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


SHAPES = ("%", "\x01%", "%00", "../", "é", "%41", "%00%0d", "a%", "%2e/", "a/")
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
        targets = [request_target(u, rng) for u in sets["dirty"]]
        decline_table({**sets, "proxy targets": targets})
    if "growth" in only:
        growth_table()
    if "throughput" in only:
        print_targets(best)
    return 0


# Issue #13's goals: (set, peer, at least this many times the peer's URLs/s).
TARGETS = (("clean", "url-py", 1.3), ("dirty", "url-py", 1.0), ("dirty", "ada_url", 3.0))


def print_targets(best: dict[tuple[str, str], float]) -> None:
    print("\ntargets (issue #13)")
    for set_name, peer, goal in TARGETS:
        if (set_name, peer) not in best:
            print(f"{set_name:<6} >= {goal}x {peer}: {peer} not installed")
            continue
        ratio = best[(set_name, "urlsan")] / best[(set_name, peer)]
        verdict = "met" if ratio >= goal else "NOT met"
        print(f"{set_name:<6} >= {goal}x {peer}: {ratio:.2f}x, {verdict}")


if __name__ == "__main__":
    sys.exit(main())
