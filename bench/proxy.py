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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), steadier than wall time on a busy box."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def hook_cpu(targets: list[bytes], mode: str, log: Path | None, repeat: int = 5) -> float:
    """CPU seconds per request spent in the addon's hook, measured in this process on test flows.

    Independent of machine load, unlike anything measured across processes: the best of
    ``repeat`` passes over ``targets``.
    """
    from mitmproxy import http
    from mitmproxy.test import taddons, tflow, tutils
    from urlsan.addon import UrlSanitizer

    addon = UrlSanitizer()
    best = float("inf")
    with taddons.context(addon) as tctx:
        tctx.configure(addon, urlsan_mode=mode, urlsan_log=str(log) if log else "")
        for _ in range(repeat):
            flows = [
                tflow.tflow(
                    req=tutils.treq(path=t, headers=http.Headers([(b"Host", b"bench.local")]))
                )
                for t in targets
            ]
            t0 = time.process_time()
            for f in flows:
                addon.requestheaders(f)
            best = min(best, (time.process_time() - t0) / len(flows))
        addon.done()
    return best


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=4000, help="per configuration")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--mode", default="rewrite", help="urlsan_mode for the addon run")
    parser.add_argument(
        "--dirty", type=float, default=0.5, help="fraction of targets with something to rewrite"
    )
    parser.add_argument(
        "--addon-set",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="more --set options for the addon run (e.g. urlsan_log= to measure without a log)",
    )
    args = parser.parse_args()

    upstream = Upstream(("127.0.0.1", 0), Handler)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{upstream.server_address[1]}"
    per_round = max(1, args.requests // args.rounds)
    n_dirty = round(per_round * args.dirty)
    targets = [DIRTY[i % len(DIRTY)] for i in range(n_dirty)]
    targets += [CLEAN[i % len(CLEAN)] for i in range(per_round - n_dirty)]
    targets = [targets[(i * 7919) % per_round] for i in range(per_round)]  # spread them out

    bin_dir = Path(sys.executable).parent
    common = ["--mode", f"reverse:{origin}", "--listen-host", "127.0.0.1", "-p", "0"]
    common += ["--set", "flow_detail=0"]  # no per-flow output; keep the listening line
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        common += ["--set", f"confdir={tmp / 'conf'}"]
        code = (
            "import sys; from urlsan.cli.proxy import proxy_main; "
            "sys.exit(proxy_main(sys.argv[1:]))"
        )
        addon_options = {"urlsan_mode": args.mode, "urlsan_log": str(tmp / "audit.jsonl")}
        addon_options.update(kv.split("=", 1) for kv in args.addon_set)
        configs = {
            "mitmdump": [str(bin_dir / "mitmdump"), *common],
            "mitmdump + urlsan": [
                sys.executable, "-c", code, *common,
                *(x for kv in addon_options.items() for x in ("--set", "=".join(kv))),
            ],
        }  # fmt: skip
        procs = {}
        try:
            for name, argv in configs.items():
                procs[name] = start_proxy(argv, tmp)
            for _, port in procs.values():  # warm up: connections, caches, imports
                run_round(port, targets[:200], args.connections)
            elapsed = dict.fromkeys(procs, 0.0)
            cpu_start = {name: cpu_seconds(p.pid) for name, (p, _) in procs.items()}
            latencies: dict[str, list[float]] = {name: [] for name in procs}
            for r in range(args.rounds):
                order = list(procs) if r % 2 == 0 else list(reversed(procs))
                for name in order:
                    seconds, lat = run_round(procs[name][1], targets, args.connections)
                    elapsed[name] += seconds
                    latencies[name] += lat
            cpu = {name: cpu_seconds(p.pid) - cpu_start[name] for name, (p, _) in procs.items()}
            log = tmp / "audit.jsonl"
            logged = len(log.read_bytes().splitlines()) if log.exists() else 0
        finally:
            for process, _ in procs.values():
                stop(process)
        hook_log = (tmp / "hook.jsonl") if addon_options["urlsan_log"] else None
        hook = hook_cpu(targets, args.mode, hook_log)
    upstream.shutdown()

    print(
        f"{len(targets) * args.rounds} requests per configuration, {args.rounds} interleaved "
        f"rounds, {args.connections} keep-alive connections, {args.dirty:.0%} dirty targets, "
        f"urlsan_mode={args.mode}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"{'':20} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU µs/req':>11}")
    rps = {}
    for name in procs:
        rps[name] = len(latencies[name]) / elapsed[name]
        p50 = statistics.median(latencies[name]) * 1000
        p99 = percentile(latencies[name], 99) * 1000
        per_request = cpu[name] / len(latencies[name]) * 1e6
        print(f"{name:20} {rps[name]:9.0f} {p50:8.2f} {p99:8.2f} {per_request:11.0f}")
    base, with_addon = rps["mitmdump"], rps["mitmdump + urlsan"]
    overhead = (1 - with_addon / base) * 100
    cpu_overhead = (cpu["mitmdump + urlsan"] / cpu["mitmdump"] - 1) * 100
    base_cpu = cpu["mitmdump"] / len(latencies["mitmdump"])
    print(
        f"throughput ratio {with_addon / base:.3f} (overhead {overhead:+.1f}%); "
        f"proxy CPU per request {cpu_overhead:+.1f}%; {logged} audit records written"
    )
    print(
        f"addon hook alone (in-process, same mix, audit log {'on' if hook_log else 'off'}): "
        f"{hook * 1e6:.1f} µs CPU per request = {hook / base_cpu * 100:.1f}% of mitmdump's "
        f"{base_cpu * 1e6:.0f} µs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
