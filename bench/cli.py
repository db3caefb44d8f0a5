"""Throughput and memory of `urlsan canon` next to the library it wraps.

    python bench/cli.py                      # the tables in docs/cli.md (a few minutes)
    python bench/cli.py --quick              # smaller inputs, for a smoke run

Inputs: the URL corpora in ../shared/data (ada-url's kasztp and userbait lists, 59,439 URLs),
each line also written in a messier but equivalent form, so that half the lines take the slow
path (rewrites) and half the fast path (already canonical).  Every command runs in its own
process and is timed from the outside, start-up included; memory is that process's peak RSS.
"""

from __future__ import annotations

import argparse
import os
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
    args = parser.parse_args(argv)
    if args.quick:
        args.lines, args.memory_lines = 100_000, 1_000_000
    urls = corpus()
    cpus = os.cpu_count() or 1
    print(
        f"Python {sys.version.split()[0]}, {cpus} CPUs, corpus {len(urls):,} URLs "
        f"({', '.join(CORPORA)}), each also in a messier equivalent form\n"
    )

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
