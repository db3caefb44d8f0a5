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

from urlsan.core import Policy, canonicalize

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CORPORA = ("ada-kasztp.txt", "ada-userbait.txt")
CLI = [sys.executable, "-m", "urlsan.core.cli"]


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


def run(argv: list[str]) -> tuple[float, int, int]:
    """Wall seconds, peak RSS in KiB, and exit status of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss, proc.returncode


def library(path: Path, profile: str) -> float:
    """Seconds for the bare library loop over the same lines (read already, no output)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    policy = Policy.profile(profile)
    start = time.perf_counter()
    for line in lines:
        canonicalize(line, policy)
    return time.perf_counter() - start


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
        print(f"## Throughput, {n:,} lines\n")
        print("| what | seconds | URLs/s | vs library |")
        print("|---|---:|---:|---:|")
        base = library(big, "rfc3986")
        print(f"| library: `canonicalize()` loop, rfc3986 | {base:.2f} | {n / base:,.0f} | 1.00 |")
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
            seconds, _, status = run([*CLI, "canon", "-i", str(big), "-o", out, *extra])
            assert status in (0, 1), (label, status)
            print(f"| {label} | {seconds:.2f} | {n / seconds:,.0f} | {base / seconds:.2f} |")

        print("\n## Memory: peak RSS of `urlsan canon -i FILE -o out.txt`\n")
        print("| lines | seconds | peak RSS (MiB) |")
        print("|---:|---:|---:|")
        sizes = sorted({args.memory_lines // 100, args.memory_lines // 10, args.memory_lines})
        for size in sizes:
            path = Path(tmp) / f"mem-{size}.txt"
            write_input(path, urls, size)
            seconds, rss, status = run([*CLI, "canon", "-i", str(path), "-o", out])
            assert status == 0, status
            print(f"| {size:,} | {seconds:.1f} | {rss / 1024:.1f} |")
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
