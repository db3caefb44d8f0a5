"""Records per CPU second of `urlsan report` on an audit log of about a million records.

    python bench/report.py                        # the table in docs/performance.md
    python bench/report.py --records 200000       # a smaller log, for a smoke run
    python bench/report.py --base ../report-base  # and the report of another checkout

The log is written by `urlsan audit` itself: an access log of the URLs in ../shared/data (ada-url's
kasztp and userbait lists), most of them made non-canonical in ways that leave no finding
(host case, a default port, an escaped letter: records with edits only), some in ways that
do (dot segments, raw non-ASCII: bench/cli.py's `dirtied`), audited once and repeated, a day
later each time, to ``--records`` lines.  Every command runs in a process of its own, timed from
the outside (user + system CPU, start-up included) and interleaved with the others ``--repeat``
times, the best kept: the machine may be shared.  Next to `urlsan report`: the floor (reading
the file in blocks and counting its lines) and the peer (``json.loads`` on every line, nothing
counted).  With ``--base``, the same report by another checkout (before a change), and whether
its output is the same byte for byte.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from corpus import load  # bench/corpus.py

from cli import dirtied  # bench/cli.py: this folder is on sys.path when run

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

_MEASURE = """
import os, subprocess, sys
out = open(sys.argv[1], "wb")
p = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status))
"""
_FLOOR = """
import sys
n = 0
with open(sys.argv[1], "rb") as f:
    while block := f.read(1 << 23):
        n += block.count(b"\\n")
print(n)
"""
_PEER = """
import json, sys
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        try:
            json.loads(line)
        except ValueError:
            pass
        n += 1
print(n)
"""
# DuckDB's JSON reader on the same file (all its threads' CPU counts): the fields counted
# most, grouped by host; malformed lines skipped (it has no line numbers for them).
_DUCKDB = """
import sys, duckdb
columns = {"ts": "VARCHAR", "client": "VARCHAR", "scheme": "VARCHAR", "host": "VARCHAR",
           "action": "VARCHAR", "status": "BIGINT"}
rows = duckdb.sql(
    "select host, action, count(*) from read_json(?, format='newline_delimited', "
    "columns=?, ignore_errors=true) group by all",
    params=[sys.argv[1], columns],
).fetchall()
print(len(rows))
"""
# Another checkout's urlsan, imported from its folders (package-dir) instead of this one's.
_BASE = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, sys.argv.pop(1))
from urlsan.cli import main
sys.argv[0] = "urlsan"
sys.exit(main())
"""


class Run(NamedTuple):
    cpu: float  # user + system seconds of the command
    status: int


def run(argv: list[str], out: Path) -> Run:
    res = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(out), *argv], capture_output=True, text=True
    )
    cpu, status = res.stdout.split()
    return Run(float(cpu), int(status))


def light(url: str, rng: random.Random) -> str:
    """``url`` made non-canonical without a finding: host case, default port, an escape."""
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    host = "".join(c.upper() if rng.random() < 0.3 else c for c in host)
    if ":" not in host and rng.random() < 0.3:
        host += ":443" if scheme.lower() == "https" else ":80"
    path = "".join(f"%{ord(c):02X}" if c.isalnum() and rng.random() < 0.05 else c for c in path)
    return f"{scheme}://{host}{slash or '/'}{path}"


def access_log(path: Path, urls: list[str]) -> None:
    """One combined-format line per URL over a day: 8% dirtied, 77% lightly, the rest as is."""
    rng = random.Random(7)
    t = 0
    with path.open("w", encoding="utf-8", errors="surrogateescape") as f:
        for url in urls:
            r = rng.random()
            url = dirtied(url, rng) if r < 0.08 else light(url, rng) if r < 0.85 else url
            if "://" not in url or " " in url or '"' in url:
                continue
            t += rng.randint(0, 3)
            when = f"22/Nov/2026:{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d} +0000"
            ip = f"10.{rng.randint(0, 3)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
            status = rng.choice((200, 200, 200, 301, 404))
            f.write(f'{ip} - - [{when}] "GET {url} HTTP/1.1" {status} 512 "-" "bench"\n')


def audit_log(folder: Path, records: int, corpus_dir: Path) -> Path:
    """An audit log of ``records`` lines written by `urlsan audit` (see the module's doc)."""
    access = folder / "access.log"
    access_log(access, load(corpus_dir))
    once = folder / "once.jsonl"
    subprocess.run(
        [sys.executable, "-m", "urlsan", "audit", "-q", "--no-progress", "-o", str(once),
         str(access)],
        check=True,
    )  # fmt: skip
    day = once.read_bytes()
    lines = day.count(b"\n")
    big = folder / "audit.jsonl"
    with big.open("wb") as f:
        for i in range(-(-records // lines)):
            shifted = day.replace(
                b'"ts":"2026-11-22T', b'"ts":"2026-%02d-%02dT' % (i // 28 + 1, i % 28 + 1)
            )
            f.write(
                shifted
                if (i + 1) * lines <= records
                else b"".join(shifted.splitlines(True)[: records - i * lines])
            )
    return big


def base_path(checkout: Path, folder: Path) -> Path:
    """A folder whose ``urlsan`` package is ``checkout``'s (its package-dir layout)."""
    pkg = folder / "base" / "urlsan"
    pkg.mkdir(parents=True)
    for item in (checkout / "urlsan").iterdir():
        (pkg / item.name).symlink_to(item.resolve())
    for sub in ("core", "audit", "addon", "cli"):
        (pkg / sub).symlink_to((checkout / sub).resolve())
    return pkg.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N interleaved runs")
    parser.add_argument("--base", type=Path, help="a checkout to compare with (before a change)")
    parser.add_argument("--corpus-dir", type=Path, default=DATA)
    parser.add_argument("--log", type=Path, help="an audit log to read instead of writing one")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log = args.log or audit_log(folder, args.records, args.corpus_dir)
        size = log.stat().st_size
        with log.open("rb") as f:
            records = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 23), b""))
        py = sys.executable
        commands: list[tuple[str, list[str]]] = [
            ("floor: read the file in 8 MiB blocks, count lines", [py, "-c", _FLOOR, str(log)]),
            ("peer: `json.loads` on every line", [py, "-c", _PEER, str(log)]),
        ]
        if importlib.util.find_spec("duckdb"):
            commands.append(
                ("DuckDB: `read_json`, 6 fields, by host", [py, "-c", _DUCKDB, str(log)])
            )
        modes = [("", []), (" --html", ["--html"]), (" --json", ["--json"])]
        if args.base:
            where = str(base_path(args.base, folder))
            commands += [
                (f"before: `urlsan report{m}`", [py, "-c", _BASE, where, "report", *x, str(log)])
                for m, x in modes
            ]
        commands += [
            (f"`urlsan report{m}`", [py, "-m", "urlsan", "report", *x, str(log)]) for m, x in modes
        ]
        best: dict[str, float] = {}
        outputs: dict[str, bytes] = {}
        for _ in range(args.repeat):
            for i, (label, argv_) in enumerate(commands):
                out = folder / f"out-{i}"
                r = run(argv_, out)
                assert r.status == 0, (label, r.status)
                best[label] = min(best.get(label, r.cpu), r.cpu)
                outputs[label] = out.read_bytes()
        print(
            f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {log.name}: "
            f"{records:,} records, {size / 1e6:,.0f} MB; best of {args.repeat}\n"
        )
        print("| what | CPU s | records per CPU second |")
        print("|---|---:|---:|")
        for label, _ in commands:
            print(f"| {label} | {best[label]:.2f} | {records / best[label]:,.0f} |")
        if args.base:
            same = all(outputs[f"before: `urlsan report{m}`"] == outputs[f"`urlsan report{m}`"]
                       for m, _ in modes)  # fmt: skip
            print(f"\nbefore and after: {'the same output' if same else 'OUTPUTS DIFFER'}")
            return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
