"""Throughput and memory of `urlsan audit`: an access log next to GoAccess, and each recorded
format next to a plain read of the same file with the same reader library.

    python bench/audit.py                # the tables in docs/performance.md (several minutes)
    python bench/audit.py --quick        # smaller inputs, for a smoke run

Inputs are made from the real URLs of ../shared/data (ada-url's kasztp and userbait lists): a
combined-format access log as nginx writes it (the request line's quotes, backslashes, controls
and bytes past ASCII escaped as ``\\xHH``), of requests for the origin-form targets of those
URLs drawn at random, a few percent of them first made non-canonical by bench/core.py's
`dirty`; clients, times, statuses, sizes, referrers and user agents vary as they do in a
server's log.  The same targets, as requests, become a mitmproxy flow file, a HAR file and a
WARC file.

Every command runs in a process of its own, timed from the outside, start-up included: CPU
seconds (user and system, the workers' too), the best of ``--repeat`` runs interleaved, since
the machine may be shared; ``--jobs 2`` against ``--jobs 1`` in wall time (what a second core
buys).  Memory is the peak RSS of the largest process.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import CORPORA, load  # bench/corpus.py

from cli import Run, cache_bytecode, run  # bench/cli.py: a command's CPU, wall and RSS
from core import dirty  # bench/core.py

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CLI = [sys.executable, "-m", "urlsan"]
DIRTY_SHARE = 0.03  # of the requests, made non-canonical first

_AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.5.0",
)
_STATUSES = (200,) * 80 + (304,) * 8 + (404,) * 5 + (301,) * 4 + (206, 403, 500)
_METHODS = ("GET",) * 95 + ("POST",) * 4 + ("HEAD",)


def request_targets(urls: list[str], count: int, rng: random.Random) -> list[str]:
    """``count`` origin-form targets of ``urls`` drawn at random, `DIRTY_SHARE` of them dirty;
    the fragment is left out (a client never sends it, RFC 9110 §7.1)."""
    out = []
    for _ in range(count):
        url = rng.choice(urls)
        if rng.random() < DIRTY_SHARE:
            url = dirty(url, rng)
        path = url.partition("://")[2].partition("/")[1:]
        out.append(("".join(path) or "/").partition("#")[0] or "/")
    return out


def _nginx(target: str) -> str:
    """``target`` as nginx writes it into ``$request``: '"', '\\', controls and bytes past
    ASCII as ``\\xHH`` (ngx_http_log_module, ``escape=default``)."""
    raw = target.encode("utf-8", "surrogateescape")
    return "".join(
        f"\\x{b:02X}" if b in (0x22, 0x5C) or b < 0x20 or b > 0x7E else chr(b) for b in raw
    )


def write_log(path: Path, targets: list[str], rng: random.Random) -> None:
    octets = (224, 256, 256, 255)
    clients = [".".join(str(rng.randrange(1, n)) for n in octets) for _ in range(5_000)]
    referrers = ["-"] * 6 + [f"https://www.example.com{t}" for t in targets[:4]]
    second = 1_764_316_800
    with path.open("w", encoding="utf-8", errors="surrogateescape") as f:
        for target in targets:
            second += rng.random() < 0.02  # about fifty requests a second
            when = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(second))
            f.write(
                f'{rng.choice(clients)} - - [{when}] "{rng.choice(_METHODS)} {_nginx(target)} '
                f'HTTP/1.1" {rng.choice(_STATUSES)} {rng.randrange(200, 90_000)} '
                f'"{rng.choice(referrers)}" "{rng.choice(_AGENTS)}"\n'
            )


def write_flows(path: Path, targets: list[str]) -> None:
    from mitmproxy.io import FlowWriter
    from mitmproxy.test import tflow, tutils

    with path.open("wb") as f:
        writer = FlowWriter(f)
        for t in targets:
            path_ = t.encode("utf-8", "surrogateescape")
            writer.add(tflow.tflow(req=tutils.treq(path=path_), resp=True))


def write_har(path: Path, targets: list[str]) -> None:
    entries = [
        {
            "startedDateTime": f"2026-11-28T10:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z",
            "request": {
                "method": "GET",
                "url": f"https://www.example.com{t}",
                "httpVersion": "HTTP/1.1",
                "headers": [{"name": "Host", "value": "www.example.com"}],
            },
            "response": {"status": 200},
        }
        for i, t in enumerate(targets)
    ]
    doc = {
        "log": {"version": "1.2", "creator": {"name": "bench", "version": "1"}, "entries": entries}
    }
    path.write_text(json.dumps(doc), encoding="utf-8", errors="surrogateescape")


def write_warc(path: Path, targets: list[str]) -> None:
    from urllib.parse import quote_from_bytes

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        for target in targets:
            # A URI, as a crawler records it: no space, control or byte past ASCII as it is.
            t = quote_from_bytes(target.encode("utf-8", "surrogateescape"), safe=_VISIBLE)
            headers = StatusAndHeaders(
                f"GET {t} HTTP/1.1", [("Host", "www.example.com")], is_http_request=True
            )
            record = writer.create_warc_record(
                f"https://www.example.com{t}", "request", payload=io.BytesIO(b""),
                http_headers=headers,
            )  # fmt: skip
            writer.write_record(record)


_VISIBLE = bytes(range(0x21, 0x7F))


# A plain read of each format, with the reader library urlsan audit reads it with: every
# record parsed, nothing done with it.
_PLAIN = {
    "access-log": "for line in open(sys.argv[1], 'rb'): pass",
    "flows": "from mitmproxy.io import FlowReader\n"
    "for flow in FlowReader(open(sys.argv[1], 'rb')).stream(): flow.request.path",
    "har": "import json\nfor e in json.load(open(sys.argv[1], 'rb'))['log']['entries']: "
    "e['request']['url']",
    "warc": "from warcio.archiveiterator import ArchiveIterator\n"
    "for r in ArchiveIterator(open(sys.argv[1], 'rb')): r.http_headers and r.http_headers.protocol",
}


def plain(fmt: str, path: Path) -> Run:
    return run([sys.executable, "-c", "import sys\n" + _PLAIN[fmt], str(path)])


def audit(path: Path, out: Path, jobs: int) -> Run:
    return run([*CLI, "audit", "-q", "-j", str(jobs), "-o", str(out), str(path)])


def goaccess(path: Path, out: Path) -> Run | None:
    if shutil.which("goaccess") is None:
        return None
    return run(["goaccess", str(path), "--log-format=COMBINED", "-o", str(out)])


def best(runs: dict[str, list[Run]], name: str) -> Run:
    got = runs[name]
    return Run(min(r.wall for r in got), min(r.cpu for r in got), max(r.rss for r in got),
               got[0].status)  # fmt: skip


def interleaved(commands: dict[str, Callable[[], Run | None]], repeat: int) -> dict[str, Run]:
    """The best CPU and wall time of each command, run in turn ``repeat`` times."""
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            r = command()
            if r is not None:
                runs[name].append(r)
    return {name: best(runs, name) for name in commands if runs[name]}


def access_log_table(folder: Path, targets: list[str], rng: random.Random, repeat: int) -> None:
    log, out = folder / "access.log", folder / "out"
    write_log(log, targets, rng)
    n = len(targets)
    got = interleaved(
        {
            "goaccess": lambda: goaccess(log, folder / "report.json"),
            "1": lambda: audit(log, out, 1),
            "2": lambda: audit(log, out, 2),
        },
        repeat,
    )
    records = sum(1 for _ in out.open("rb"))
    size = log.stat().st_size / 2**20
    print(f"## Access log: {n:,} lines ({size:.0f} MiB, {records:,} audit records), "
          f"best of {repeat}\n")  # fmt: skip
    print("| command | CPU s | lines per CPU s | vs GoAccess | wall s |")
    print("|---|---:|---:|---:|---:|")
    base = got.get("goaccess")
    if base is not None:
        print(f"| `goaccess access.log --log-format=COMBINED -o report.json` | {base.cpu:.2f} "
              f"| {n / base.cpu:,.0f} | 1.00 | {base.wall:.2f} |")  # fmt: skip
    for jobs in ("1", "2"):
        r = got[jobs]
        ratio = f"{base.cpu / r.cpu:.2f}" if base is not None else "n/a"
        print(f"| `urlsan audit -j {jobs} access.log -o out.jsonl` | {r.cpu:.2f} "
              f"| {n / r.cpu:,.0f} | {ratio} | {r.wall:.2f} |")  # fmt: skip
    print(f"\n`-j 2` vs `-j 1`, wall: {got['1'].wall / got['2'].wall:.2f}x\n")


def formats_table(folder: Path, targets: list[str], repeat: int) -> None:
    makers = {"flows": write_flows, "har": write_har, "warc": write_warc}
    print(f"## Each format against a plain read of it, {len(targets):,} requests, best of "
          f"{repeat}\n")  # fmt: skip
    print("| format | plain read CPU s | `urlsan audit` CPU s | audit / read "
          "| `-j 1` wall s | `-j 2` wall s | `-j 2` vs `-j 1` |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    out = folder / "out"
    for fmt, make in makers.items():
        path = folder / f"requests.{fmt}"
        make(path, targets)
        got = interleaved(
            {
                "read": lambda: plain(fmt, path),  # noqa: B023 - run at once, in this turn
                "1": lambda: audit(path, out, 1),  # noqa: B023
                "2": lambda: audit(path, out, 2),  # noqa: B023
            },
            repeat,
        )
        read, one, two = got["read"], got["1"], got["2"]
        print(f"| {fmt} | {read.cpu:.2f} | {one.cpu:.2f} | {one.cpu / read.cpu:.2f} "
              f"| {one.wall:.2f} | {two.wall:.2f} | {one.wall / two.wall:.2f} |")  # fmt: skip
        path.unlink()
    print()


def memory_table(folder: Path, urls: list[str], sizes: list[int]) -> None:
    print("## Memory: peak RSS of `urlsan audit -o out.jsonl access.log`\n")
    print("| lines | `-j 1` wall s | `-j 1` peak RSS (MiB) | `-j 2` peak RSS (MiB) |")
    print("|---:|---:|---:|---:|")
    out = folder / "out"
    for size in sizes:
        log = folder / f"mem-{size}.log"
        write_log(log, request_targets(urls, size, random.Random(size)), random.Random(1))
        one, two = audit(log, out, 1), audit(log, out, 2)
        assert one.status == two.status == 0, (one, two)
        print(f"| {size:,} | {one.wall:.1f} | {one.rss / 1024:.1f} | {two.rss / 1024:.1f} |")
        log.unlink()
    print()


def huge_table(folder: Path, urls: list[str], gib: float) -> None:
    """Peak RSS on a log of ``gib`` GiB: a 200,000-line log written once and repeated (the
    lines repeat, the reading does not know it), so that the input costs seconds to make."""
    print(f"## Memory: peak RSS of `urlsan audit -o out.jsonl access.log`, {gib:g} GiB\n")
    print("| log | lines | `-j` | wall s | CPU s | peak RSS (MiB) |")
    print("|---|---:|---:|---:|---:|---:|")
    part, log, out = folder / "part.log", folder / "huge.log", folder / "out"
    write_log(part, request_targets(urls, 200_000, random.Random(7)), random.Random(1))
    data = part.read_bytes()
    copies = max(1, round(gib * 2**30 / len(data)))
    with log.open("wb") as f:
        for _ in range(copies):
            f.write(data)
    lines = copies * data.count(b"\n")
    for jobs in (1, 2):
        r = audit(log, out, jobs)
        assert r.status == 0, r
        print(f"| {copies * len(data) / 2**30:.1f} GiB | {lines:,} | {jobs} | {r.wall:.0f} "
              f"| {r.cpu:.0f} | {r.rss / 1024:.1f} |")  # fmt: skip
    log.unlink()
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000, help="access log lines")
    parser.add_argument("--requests", type=int, default=20_000, help="requests per format")
    parser.add_argument("--memory-lines", type=int, default=2_000_000, help="largest log")
    parser.add_argument("--repeat", type=int, default=5, help="best of N runs")
    parser.add_argument("--quick", action="store_true", help="50k lines, 5k requests, 500k")
    parser.add_argument("--corpus-dir", type=Path, default=DATA, help="the ada-*.txt corpora")
    parser.add_argument("--only", choices=("log", "formats", "memory"), help="one table")
    parser.add_argument(
        "--huge", type=float, metavar="GIB", help="also a log of GIB GiB (disk: twice that)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.lines, args.requests, args.memory_lines, args.repeat = 50_000, 5_000, 500_000, 3
    urls = load(args.corpus_dir)
    cache_bytecode()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; corpus {len(urls):,} URLs ({', '.join(CORPORA)}), "
          f"{DIRTY_SHARE:.0%} of requests made non-canonical\n")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="urlsan-bench-audit-") as tmp:
        folder = Path(tmp)
        rng = random.Random(2026)
        if args.only in (None, "log"):
            access_log_table(folder, request_targets(urls, args.lines, rng), rng, args.repeat)
        if args.only in (None, "formats"):
            formats_table(folder, request_targets(urls, args.requests, rng), args.repeat)
        if args.only in (None, "memory"):
            memory_table(folder, urls, [args.memory_lines // 10, args.memory_lines])
        if args.huge:
            huge_table(folder, urls, args.huge)
    print(f"(load {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
