"""Throughput and latency through mitmdump, with the urlsan addon and without it.

    python bench/proxy.py                 # 4000 requests per configuration, 8 rounds
    python bench/proxy.py --requests 10000 --connections 8

Both mitmdumps run in reverse mode (``--mode reverse:URL``) in front of one local HTTP/1.1
upstream; rounds alternate between them so that both see the same machine state.  Half of the
targets are clean (nothing to rewrite), half are dirty (dot segments, escapes, stray percents,
fragments).  The addon writes its audit log as it would in production.  Loopback only.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CLEAN = [
    b"/",
    b"/index.html",
    b"/api/v1/items?page=2&sort=name",
    b"/static/app.3f2a1c.js",
    b"/search?q=url+canonicalization",
    b"/users/42/profile",
]
DIRTY = [
    b"/a/./b/../c",
    b"/%7euser/%2fdocs",
    b"/search?q=%zz",
    b"/api/v1/../v2/items?x=%41",
    b"/page#section",
    b"/caf%c3%a9/menu",
]
LISTENING = re.compile(rb"listening at (?:\*|[\d.]+|\[[^\]]*\]):(\d+)")


class Upstream(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        body = b"ok\n"
        response = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        while True:
            line = self.rfile.readline(65536)
            if not line:
                return
            while self.rfile.readline(65536) not in (b"\r\n", b"\n", b""):
                pass
            self.wfile.write(response)


def start_proxy(argv: list[str], tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp)
    assert process.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        m = LISTENING.search(line)
        if m:
            # Keep draining mitmdump's output so that it never blocks on a full pipe.
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return process, int(m.group(1))
    process.kill()
    raise SystemExit(f"mitmdump did not start: {' '.join(argv)}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(port: int, targets: list[bytes]) -> list[float]:
    """Send ``targets`` over one keep-alive connection; the latency of each, in seconds."""
    latencies = []
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        f = s.makefile("rb")
        for target in targets:
            t0 = time.perf_counter()
            s.sendall(b"GET %s HTTP/1.1\r\nHost: bench.local\r\n\r\n" % target)
            length = 0
            while True:
                line = f.readline()
                if line in (b"\r\n", b""):
                    break
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            f.read(length)
            latencies.append(time.perf_counter() - t0)
    return latencies


def run_round(port: int, targets: list[bytes], connections: int) -> tuple[float, list[float]]:
    chunks = [targets[i::connections] for i in range(connections)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(connections) as pool:
        results = list(pool.map(lambda c: client(port, c), chunks))
    elapsed = time.perf_counter() - t0
    return elapsed, [x for r in results for x in r]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=4000, help="per configuration")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--mode", default="rewrite", help="urlsan_mode for the addon run")
    args = parser.parse_args()

    upstream = Upstream(("127.0.0.1", 0), Handler)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{upstream.server_address[1]}"
    per_round = max(1, args.requests // args.rounds)
    mix = (CLEAN + DIRTY) * (per_round // (len(CLEAN) + len(DIRTY)) + 1)
    targets = mix[:per_round]

    bin_dir = Path(sys.executable).parent
    common = ["--mode", f"reverse:{origin}", "--listen-host", "127.0.0.1", "-p", "0"]
    common += ["--set", "flow_detail=0"]  # no per-flow output; keep the listening line
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        common += ["--set", f"confdir={tmp / 'conf'}"]
        code = (
            "import sys; from urlsan.addon.cli import proxy_main; "
            "sys.exit(proxy_main(sys.argv[1:]))"
        )
        configs = {
            "mitmdump": [str(bin_dir / "mitmdump"), *common],
            "mitmdump + urlsan": [
                sys.executable, "-c", code, *common,
                "--set", f"urlsan_mode={args.mode}", "--set", f"urlsan_log={tmp / 'audit.jsonl'}",
            ],
        }  # fmt: skip
        procs = {}
        try:
            for name, argv in configs.items():
                procs[name] = start_proxy(argv, tmp)
            for _, port in procs.values():  # warm up: connections, caches, imports
                run_round(port, targets[:200], args.connections)
            elapsed = dict.fromkeys(procs, 0.0)
            latencies: dict[str, list[float]] = {name: [] for name in procs}
            for r in range(args.rounds):
                order = list(procs) if r % 2 == 0 else list(reversed(procs))
                for name in order:
                    seconds, lat = run_round(procs[name][1], targets, args.connections)
                    elapsed[name] += seconds
                    latencies[name] += lat
            logged = len((tmp / "audit.jsonl").read_bytes().splitlines())
        finally:
            for process, _ in procs.values():
                stop(process)
    upstream.shutdown()

    print(
        f"{len(targets) * args.rounds} requests per configuration, {args.rounds} interleaved "
        f"rounds, {args.connections} keep-alive connections, {len(CLEAN)}:{len(DIRTY)} "
        f"clean:dirty targets, urlsan_mode={args.mode}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"{'':20} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    rps = {}
    for name in procs:
        rps[name] = len(latencies[name]) / elapsed[name]
        p50 = statistics.median(latencies[name]) * 1000
        p99 = percentile(latencies[name], 99) * 1000
        print(f"{name:20} {rps[name]:9.0f} {p50:8.2f} {p99:8.2f}")
    base, with_addon = rps["mitmdump"], rps["mitmdump + urlsan"]
    overhead = (1 - with_addon / base) * 100
    print(
        f"throughput ratio {with_addon / base:.3f} (overhead {overhead:+.1f}%); "
        f"{logged} audit records written"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
