"""The pure-Python driver against an earlier commit's, on the same dirty URLs (issue #13).

    .venv/bin/python bench/driver.py [--base 4e0e2b8] [--urls 10000] [--turns 6] [--rounds 4]
                                     [--corpus-dir ../shared/data] [--no-count]

Issue #13 asks the driver (what runs without a C compiler) to be twice as fast on dirty URLs as
it was at commit 4e0e2b8.  Both drivers canonicalize the first ``--urls`` URLs of bench/core.py's
dirty set (`core.dirty`, seeded), the compiled twin set aside (URLSAN_NO_EXTENSIONS=1), each in
a process of its own that imports its own code: the base commit is checked out with
``git worktree`` into a temporary directory, and each tree is imported through symbolic links
laid out as pyproject.toml's ``package-dir`` installs it.  Two measures:

- microseconds per URL by the clock: the best pass of all, each process timing ``--rounds``
  passes, the drivers' processes in turn ``--turns`` times (a shared machine's speed drifts by
  tens of percent within a minute: many short turns give both drivers its quiet moments);
- instructions per URL under callgrind (when valgrind is installed; ``--no-count`` skips it):
  a run that canonicalizes every URL twice less one that does it once, so that start-up and a
  policy's first-call work (compiling its scanners) cancel out.  Deterministic with
  PYTHONHASHSEED=0, within about 0.5% of code layout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import core as bench_core  # noqa: E402 - bench/core.py, beside this file

# Runs in the driver's own process: canonicalize the URLs ``passes`` times (mode "count"), or
# time ``passes`` rounds and print the best, in microseconds per URL (mode "clock").
WORKER = """
import json, sys, time
from urlsan.core import canonicalize
urls = json.load(open(sys.argv[1]))
mode, passes = sys.argv[2], int(sys.argv[3])
if mode == "count":
    for _ in range(passes):
        for u in urls:
            canonicalize(u)
else:
    for u in urls:
        canonicalize(u)
    best = float("inf")
    for _ in range(passes):
        t = time.perf_counter()
        for u in urls:
            canonicalize(u)
        best = min(best, time.perf_counter() - t)
    print(best / len(urls) * 1e6)
"""


def farm(tree: Path, into: Path) -> Path:
    """A directory to put on PYTHONPATH that imports ``tree``'s packages as installed."""
    with open(tree / "pyproject.toml", "rb") as f:
        package_dir = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(package_dir.items()):  # "urlsan" before "urlsan.core"
        target = into.joinpath(*package.split("."))
        if package == "urlsan":
            target.mkdir(parents=True)
            for item in (tree / folder).iterdir():
                (target / item.name).symlink_to(item)
        else:
            target.symlink_to(tree / folder, target_is_directory=True)
    return into


def run(path: Path, *args: str, count: bool = False) -> str:
    env = {**os.environ, "PYTHONPATH": str(path), "URLSAN_NO_EXTENSIONS": "1"}
    env.pop("PYTHONSTARTUP", None)
    command = [sys.executable, "-c", WORKER, *args]
    if count:
        env["PYTHONHASHSEED"] = "0"
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    if count:
        return re.search(r"Collected : (\d+)", done.stderr)[1]  # type: ignore[index]
    return done.stdout


def instructions(path: Path, urls: Path, n: int) -> float:
    once = int(run(path, str(urls), "count", "1", count=True))
    twice = int(run(path, str(urls), "count", "2", count=True))
    return (twice - once) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="4e0e2b8", help="the commit to compare with")
    parser.add_argument("--urls", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--corpus-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--no-count", action="store_true", help="skip callgrind")
    args = parser.parse_args()
    count = not args.no_count and shutil.which("valgrind") is not None
    rng = random.Random(1)
    urls = [bench_core.dirty(u, rng) for u in bench_core.load(args.corpus_dir)][: args.urls]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "urls.json").write_text(json.dumps(urls))
        base = work / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.base],
            check=True,
        )
        try:
            trees = {f"{args.base} (base)": farm(base, work / "farm-base")}
            trees["this tree"] = farm(ROOT, work / "farm-here")
            report(trees, work / "urls.json", len(urls), args.turns, args.rounds, count)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)])
    return 0


def report(
    trees: dict[str, Path], urls: Path, n: int, turns: int, rounds: int, count: bool
) -> None:
    print(f"Python {sys.version.split()[0]}, {n} dirty URLs, the compiled twin set aside")
    clock = {name: float("inf") for name in trees}
    for _ in range(turns):  # the drivers in turn: drift of the machine hits both
        for name, path in trees.items():
            clock[name] = min(clock[name], float(run(path, str(urls), "clock", str(rounds))))
    counted = {name: instructions(path, urls, n) for name, path in trees.items()} if count else {}
    print(f"{'driver':<20}{'us/URL':>10}{'instructions/URL':>20}")
    for name in trees:
        ins = f"{counted[name] / 1000:,.1f}k" if count else "-"
        print(f"{name:<20}{clock[name]:>10.2f}{ins:>20}")
    base, here = list(trees)
    line = f"{'ratio':<20}{clock[base] / clock[here]:>9.2f}x"
    if count:
        line += f"{counted[base] / counted[here]:>19.2f}x"
    print(line)
    print("issue #13 asks 2x the driver of 4e0e2b8")


if __name__ == "__main__":
    sys.exit(main())
