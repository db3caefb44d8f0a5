"""Throughput and memory of `urlsan canon` next to the library it wraps.

    python bench/cli.py                      # the tables in docs/cli.md (a few minutes)
    python bench/cli.py --quick              # smaller inputs, for a smoke run
    python bench/cli.py --scaling            # only the --jobs table (issue #12)

The --jobs table (`scaling`) runs the corpora repeated to `--scaling-lines` lines, once as they
are ("clean") and once made non-canonical ("dirty", the idea of bench/core.py's `dirty`):
one process against an in-process loop over `canonicalize` on the same file, and ``--jobs 2``
against ``--jobs 1`` (wall time: what more processes buy).

Inputs: the URL corpora in ../shared/data (ada-url's kasztp and userbait lists, 59,439 URLs),
each line also written in a messier but equivalent form, so that half the lines take the slow
path (rewrites) and half the fast path (already canonical).  Every command runs in its own
process and is timed from the outside, start-up included; memory is that process's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from urlsan.core import Policy, canonicalize

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CORPORA = ("ada-kasztp.txt", "ada-userbait.txt")
CLI = [sys.executable, "-m", "urlsan"]


def cache_bytecode() -> None:
    """Run the command once with its bytecode written, as ``pip install`` leaves it: with
    PYTHONDONTWRITEBYTECODE set (as on some CI machines) every run would compile urlsan's
    modules again, a third of its start-up, which no installed urlsan pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([*CLI, "canon", "http://a/"], env=env, capture_output=True, check=True)


def corpus() -> list[str]:
    lines: list[str] = []
    for name in CORPORA:
        text = (DATA / name).read_text(encoding="utf-8", errors="surrogateescape")
        lines += [line.strip().lstrip("\ufeff") for line in text.splitlines() if line.strip()]
    return lines


def messier(url: str) -> str:
    """An equivalent URL that needs rewriting: upper-case scheme, escaped '~', a dot segment."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    return f"{scheme.upper()}://{host}/./{path.replace('~', '%7e')}" if slash else url.upper()


def write_input(path: Path, urls: list[str], count: int) -> None:
    mixed = [u for url in urls for u in (url, messier(url))]
    with path.open("w", encoding="utf-8", errors="surrogateescape") as f:
        written = 0
        while written < count:
            batch = mixed[: count - written]
            f.write("\n".join(batch) + "\n")
            written += len(batch)


def dirtied(url: str, rng: random.Random) -> str:
    """An equivalent URL made non-canonical (bench/core.py's `dirty`, kept short): random case
    of scheme and host, default port, escapes of unreserved characters, dot segments, raw é."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    host = "".join(c.upper() if rng.random() < 0.5 else c for c in host)
    scheme = scheme.upper() if rng.random() < 0.5 else scheme
    if ":" not in host and rng.random() < 0.5:
        host += ":443" if scheme.lower() == "https" else ":80"
    path = "".join(f"%{ord(c):02x}" if c.isalnum() and rng.random() < 0.1 else c for c in path)
    if rng.random() < 0.5:
        path = "a/./b/../" + path
    if rng.random() < 0.3:
        path += "/é"
    return f"{scheme}://{host}{slash or '/'}{path}"


def write_scaling_inputs(folder: Path, urls: list[str], count: int) -> dict[str, Path]:
    repeated = (urls * (count // len(urls) + 1))[:count]
    rng = random.Random(12)
    inputs = {"clean": repeated, "dirty": [dirtied(u, rng) for u in repeated]}
    paths = {}
    for name, lines in inputs.items():
        paths[name] = folder / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    return paths


# The library side of the comparison, in a process of its own like the command: a for loop
# over the file's lines, as a user of the library would write it.  Prints CPU and wall seconds.
_LOOP = """
import sys, time
from urlsan.core import InvalidTarget, canonicalize
cpu, wall = time.process_time(), time.perf_counter()
with open(sys.argv[1], encoding="utf-8", errors="surrogateescape") as f:
    for line in f:
        try:
            canonicalize(line.strip())
        except (InvalidTarget, ValueError):
            pass
print(time.process_time() - cpu, time.perf_counter() - wall)
"""


def library_loop(path: Path) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _LOOP, str(path)], capture_output=True, text=True)
    cpu, wall = out.stdout.split()
    return float(cpu), float(wall)


def _best(runs: list[Run]) -> Run:
    """The least wall and the least CPU time of repeated runs: what the machine's other load
    added is noise, and the least of it the nearest to none."""
    return Run(min(r.wall for r in runs), min(r.cpu for r in runs), runs[0].rss, runs[0].status)


def scaling(urls: list[str], count: int, repeat: int) -> None:
    """The --jobs table: ratios of one process to the library loop, and of 2 jobs to 1."""
    print(f"## --jobs, {count:,} lines, best of {repeat} ({os.getloadavg()[0]:.1f} load)\n")
    print(
        "| input | library CPU s | `-j 1` CPU s (start-up) | `-j 1` vs library (less start-up) "
        "| `-j 1` wall s | `-j 2` wall s | `-j 2` CPU s | `-j 2` vs `-j 1`: wall | CPU |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    startup = min(run([*CLI, "canon", "http://a/"]).cpu for _ in range(repeat))
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_scaling_inputs(Path(tmp), urls, count)
        out = str(Path(tmp) / "out.txt")
        for name, path in paths.items():
            runs: dict[str, list[Run]] = {"1": [], "2": []}
            lib_cpu = float("inf")
            for _ in range(repeat):  # interleaved, so that drift of the load hits all alike
                lib_cpu = min(lib_cpu, library_loop(path)[0])
                for jobs, done in runs.items():
                    done.append(run([*CLI, "canon", "-q", "-i", str(path), "-o", out, "-j", jobs]))
            one, two = _best(runs["1"]), _best(runs["2"])
            assert one.status in (0, 3) and two.status == one.status, (one, two)
            print(
                f"| {name} | {lib_cpu:.2f} | {one.cpu:.2f} ({startup:.2f}) "
                f"| {lib_cpu / one.cpu:.2f} ({lib_cpu / (one.cpu - startup):.2f}) "
                f"| {one.wall:.2f} | {two.wall:.2f} | {two.cpu:.2f} "
                f"| {one.wall / two.wall:.2f} | {two.cpu / one.cpu:.2f} |"
            )
    print(f"\n(load {os.getloadavg()[0]:.1f} at the end)")
    print(
        "\n`-j 1` vs library: the loop's CPU time over the command's (start-up included, and "
        "without it); `-j 2` vs `-j 1`: wall time of one over that of two (above 1: faster), "
        "and the CPU time all processes of `-j 2` spend over that of `-j 1` (the cost of "
        "splitting the work: on two idle cores, `-j 2` can at best be 2 / that faster).\n"
    )


# A small parent that starts the command and reports its peak RSS.  Measuring from this process
# would not do: a child forked from a big parent counts the parent's pages until it execs.
_MEASURE = """
import os, subprocess, sys, time
start = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
cpu = usage.ru_utime + usage.ru_stime
print(time.perf_counter() - start, cpu, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


class Run(NamedTuple):
    wall: float  # seconds
    cpu: float  # seconds of CPU, user and system, of the command and its worker processes
    rss: int  # peak resident set, KiB (the largest single process)
    status: int


def run(argv: list[str]) -> Run:
    out = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True)
    wall, cpu, rss, status = out.stdout.split()
    return Run(float(wall), float(cpu), int(rss), int(status))


def library(path: Path, profile: str) -> float:
    """CPU seconds of the bare library loop over the same lines (read already, no output)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    policy = Policy.profile(profile)
    start = time.process_time()
    for line in lines:
        canonicalize(line, policy)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="throughput input size")
    parser.add_argument("--memory-lines", type=int, default=10_000_000, help="largest input")
    parser.add_argument("--quick", action="store_true", help="100k lines, 1M for memory")
    parser.add_argument("--scaling", action="store_true", help="only the --jobs table")
    parser.add_argument("--scaling-lines", type=int, default=600_000, help="--jobs input size")
    parser.add_argument("--repeat", type=int, default=5, help="--jobs table: best of N runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.lines, args.memory_lines = 100_000, 1_000_000
    urls = corpus()
    cpus = os.cpu_count() or 1
    cache_bytecode()
    print(
        f"Python {sys.version.split()[0]}, {cpus} CPUs, corpus {len(urls):,} URLs "
        f"({', '.join(CORPORA)}), each also in a messier equivalent form\n"
    )
    scaling(urls, args.scaling_lines, args.repeat)
    if args.scaling:
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "urls.txt"
        write_input(big, urls, args.lines)
        n = args.lines
        print(f"## Throughput, {n:,} lines (CPU seconds: the machine may be shared)\n")
        print("| what | CPU s | wall s | URLs per CPU second | vs library |")
        print("|---|---:|---:|---:|---:|")
        base = library(big, "rfc3986")
        print(f"| library: `canonicalize()` loop | {base:.2f} | | {n / base:,.0f} | 1.00 |")
        commands = [
            ("`urlsan canon -i urls.txt -o out.txt`", []),
            ("`urlsan canon --profile crawler ...`", ["--profile", "crawler"]),
            ("`urlsan canon --json ...`", ["--json"]),
            ("`urlsan canon --dedupe ...`", ["--dedupe"]),
            ("`urlsan canon --check ...`", ["--check"]),
            (f"`urlsan canon --jobs {cpus} ...`", ["--jobs", str(cpus)]),
        ]
        out = str(Path(tmp) / "out.txt")
        for label, extra in commands:
            r = run([*CLI, "canon", "-i", str(big), "-o", out, *extra])
            assert r.status in (0, 1), (label, r.status)
            print(
                f"| {label} | {r.cpu:.2f} | {r.wall:.2f} | {n / r.cpu:,.0f} | {base / r.cpu:.2f} |"
            )

        print("\n## Memory: peak RSS of `urlsan canon -i FILE -o out.txt`\n")
        print("| lines | wall s | peak RSS (MiB) |")
        print("|---:|---:|---:|")
        sizes = sorted({args.memory_lines // 100, args.memory_lines // 10, args.memory_lines})
        for size in sizes:
            path = Path(tmp) / f"mem-{size}.txt"
            write_input(path, urls, size)
            r = run([*CLI, "canon", "-i", str(path), "-o", out])
            assert r.status == 0, r.status
            print(f"| {size:,} | {r.wall:.1f} | {r.rss / 1024:.1f} |")
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
