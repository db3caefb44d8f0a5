"""Throughput, latency, memory and hook cost through mitmdump, with the urlsan addon and without it.

    python bench/proxy.py                        # every scenario below
    python bench/proxy.py --scenario mix --requests 10000 --connections 8
    python bench/proxy.py --scenario hostile --hostile eacute ctl-under
    python bench/proxy.py --scenario memory --large 1000
    python bench/proxy.py --scenario hook
    python bench/proxy.py --scenario hook --hook-rounds 15 --count   # + instructions (callgrind)

(or ``python -m bench.proxy …`` from the checkout's root).  The processes and the upstream are
the tests' own (tests.harness): run as a file, this script puts the checkout's root first on
sys.path to import them.

The mitmdumps (with urlsan, without it, and for the mix one with an addon that does nothing)
run in reverse mode (``--mode reverse:URL``) in front of one local HTTP/1.1 upstream, a process
of its own; rounds alternate between them so that all see the same machine state.  The addon
writes its audit log as it would in production.  Loopback only.  Scenarios:

* ``mix``: origin-form targets from the real corpora (``--targets real``, `load_real_targets`),
  half of them as they are and half made dirty as bench/core.py makes them (case, escapes,
  dot segments, raw excluded characters and UTF-8); ``--targets fixed``: a few short ones
  written out below, half clean and half dirty.  A third mitmdump runs an addon that does
  nothing (`NOOP`): what one more addon costs mitmproxy, whatever it does.  Requests per
  second, p50/p99 latency, each proxy's CPU per request; then the hook's own time per request
  inside the running proxy (`HOOK_TIMER`), which is two to four times what the same hook costs
  in a tight loop: between requests mitmproxy's own work evicts the hook's code and data from
  the CPU caches.
* ``hostile``: the same mix from ``--connections`` clients while one more client sends huge
  hostile targets back to back (``--hostile``): the other clients' p50/p99/max latency, through
  mitmdump alone and with urlsan.  urlsan must not make them wait on its canonicalization.
* ``memory``: ``--large`` huge requests, one after the other (`LARGE_MIX`: megabytes of ``é``,
  of controls and stray ``%`` and of plain ASCII, the same under urlsan_max_target's 64 KiB, a
  9,000-segment dot path): each proxy's resident memory (and the urlsan worker process's) as
  they go.
* ``hook``: the addon's hook alone, in this process, on dirty targets with the log on, by part
  (each part measured by stubbing it out: the check, decide/apply/metadata, the record, and the
  log write's redaction, JSON encoding and file write); then mitmproxy's own cost of calling
  its addons, per event and for one more addon (`dispatch_cost`).  With ``--count``, the whole
  hook's and the least hook's instructions per request too, under callgrind
  (`hook_instructions`), which the machine's load does not move.
* Then the addon's hook alone, in this process: CPU per request on the mix and on dirty targets.

``mix`` also prints the per-round ratio of the two proxies' CPU (median and range), since on a
shared machine one round can be off by a third either way; ``hostile`` alternates the two
proxies over ``--hostile-rounds`` rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

if not __package__:  # python bench/proxy.py: the checkout's root, for tests.harness and bench
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import callgrind
from tests.harness import Mitmdump, mitmdump_command, upstream_process
from urlsan.addon.sanitizer import MAX_TARGET

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

# Run inside the urlsan proxy of the mix scenario (bench only): each request's hook timed where
# it really runs, between mitmproxy's own work, which leaves the CPU caches cold for it; the
# in-process figures below run it in a tight loop, caches warm.  Wall time (a monotonic clock
# every process shares, so the bench can pick out the mix rounds), written out at exit.
HOOK_TIMER = """
import atexit, json, time
from urlsan.addon.sanitizer import UrlSanitizer
_clock, _samples, _hook = time.perf_counter_ns, [], UrlSanitizer.requestheaders
def _timed(self, flow):
    start = _clock()
    pending = _hook(self, flow)
    if pending is None:  # a long target's coroutine is the worker's time, not the hook's
        facts = flow.metadata.get("urlsan") or {}
        _samples.append((start, _clock() - start, facts.get("action")))
    return pending
UrlSanitizer.requestheaders = _timed
atexit.register(lambda: json.dump(_samples, open(TIMES, "w")))
"""


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
            read_response(f)
            latencies.append(time.perf_counter() - t0)
    return latencies


def read_response(f: BinaryIO) -> bytes:
    """One response from ``f``: its head, then its body by Content-Length; its status line."""
    status = f.readline()
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    f.read(length)
    return status


def run_round(port: int, targets: list[bytes], connections: int) -> tuple[float, list[float]]:
    chunks = [targets[i::connections] for i in range(connections)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(connections) as pool:
        results = list(pool.map(lambda c: client(port, c), chunks))
    elapsed = time.perf_counter() - t0
    return elapsed, [x for r in results for x in r]


def _flows(targets: list[str]) -> list[Any]:
    """Test flows for ``targets``, as the proxy would see them sent to one host."""
    from mitmproxy import http
    from mitmproxy.test import tflow, tutils

    host = http.Headers([(b"Host", b"bench.local")])
    return [tflow.tflow(req=tutils.treq(path=t, headers=host.copy())) for t in targets]


_RESPONSE: list[Any] = []


def _answered(addon: Any, flow: Any) -> None:
    """The response's headers arrive (an upstream's 200, unless urlsan answered): the addon
    writes the request's record then, with its status."""
    if not _RESPONSE:
        from mitmproxy.test import tutils

        _RESPONSE.append(tutils.tresp())
    if flow.response is None:
        flow.response = _RESPONSE[0]
    addon.responseheaders(flow)


def hook_cpu(targets: list[bytes], mode: str, log: Path | None, repeat: int = 5) -> float:
    """CPU seconds per request spent in the addon's hooks (requestheaders, and responseheaders,
    which writes the record), measured in this process on test flows.

    Independent of machine load, unlike anything measured across processes: the best of
    ``repeat`` passes over ``targets``.
    """
    from mitmproxy.test import taddons

    from urlsan.addon import UrlSanitizer

    addon = UrlSanitizer()
    best = float("inf")
    with taddons.context(addon) as tctx:
        tctx.configure(addon, urlsan_mode=mode, urlsan_log=str(log) if log else "")
        for _ in range(repeat):
            flows = _flows(targets)
            t0 = time.process_time()
            for f in flows:
                addon.requestheaders(f)
                _answered(addon, f)
            best = min(best, (time.process_time() - t0) / len(flows))
        addon.done()
    return best


# The addon's hook by part: each part is what the hook saves when that part is stubbed out (a
# no-op), measured on the same flows.  Nested: "log.write" holds the three parts below it.
HOOK_PARTS: tuple[tuple[str, str, str], ...] = (
    # (part, the variant it is measured from, the variant with the part stubbed out)
    ("request, examine: core (check_target), decide", "no apply", "no hook"),
    ("apply, flow.metadata facts", "no record", "no apply"),
    ("record: counters, fields, dict", "no write", "no record"),
    ("log.write", "full", "no write"),
    ("  redaction", "full", "no redact"),
    ("  JSON encoding", "full", "no encode"),
    ("  file: write(2), path check", "full", "no file"),
)


def _stub(addon: Any, variant: str) -> Any:
    """Stub out one part of ``addon`` (configured with a log) for `hook_parts`; returns an undo."""
    from urlsan.audit import record as audit_record

    log = addon.log
    undo: Any = lambda: None  # noqa: E731
    if variant == "no write":
        log.write = lambda record: True
    elif variant == "no record":
        addon._done_with = lambda flow, outcome, asked: None
    elif variant == "no apply":
        addon._apply = lambda flow, outcome: None
        addon._done_with = lambda flow, outcome, asked: None
    elif variant == "no redact":
        redactor = log.redactor
        log.redactor = type("Nothing", (), {"record": staticmethod(lambda r: r)})()
        undo = lambda: setattr(log, "redactor", redactor)  # noqa: E731
    elif variant == "no encode":
        encode = audit_record.encode_record
        audit_record.encode_record = lambda record: "{}"
        undo = lambda: setattr(audit_record, "encode_record", encode)  # noqa: E731
    elif variant == "no file":
        log._append = lambda data, notes: None
    return undo


def _least_hook(log: Any) -> Callable[[Any], None]:
    """The least any hook that keeps this record can do for a request: canonicalize the target,
    set it, keep the facts in the flow, and append one JSON line to the log.  No Host header,
    no decision, no redaction, no comment: what the addon's hook costs above this is those."""
    from urlsan.audit import record as audit_record
    from urlsan.core import canonicalize

    def hook(flow: Any) -> None:
        request = flow.request
        result = canonicalize(request.data.path)
        request.data.path = result.url.encode("ascii")
        facts = audit_record.facts(
            before=result.input, after=result.url, action="rewritten", edits=result.edits,
            findings=result.findings,
        )  # fmt: skip
        flow.metadata["urlsan"] = facts
        record = audit_record.build(
            ts=audit_record.rfc3339(time.time()), client="192.0.2.1:4000", method=request.method,
            scheme=request.scheme, host="bench.local", http_version=request.http_version,
            facts_=facts,
        )  # fmt: skip
        os.write(log._fd, (audit_record.encode_record(record) + "\n").encode("ascii"))

    return hook


def hook_parts(targets: list[bytes], mode: str, log: Path, rounds: int = 5) -> dict[str, float]:
    """CPU seconds per request of each variant of `HOOK_PARTS` (best of ``rounds``, the variants
    interleaved in each round, so that a change in machine load hits them all alike)."""
    from mitmproxy.test import taddons, tflow, tutils

    from urlsan.addon import UrlSanitizer

    variants = dict.fromkeys([*(v for _, *pair in HOOK_PARTS for v in pair), "least"])
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(rounds):
        for variant in variants:
            addon = UrlSanitizer()
            with taddons.context(addon) as tctx:
                tctx.configure(addon, urlsan_mode=mode, urlsan_log=str(log))
                undo = _stub(addon, variant)
                hook = addon.requestheaders
                if variant in ("no hook", "least"):
                    hook = (lambda f: None) if variant == "no hook" else _least_hook(addon.log)
                for warm in targets[:50]:
                    hook(tflow.tflow(req=tutils.treq(path=warm)))
                flows = _flows(targets)
                t0 = time.process_time()
                for f in flows:
                    hook(f)
                    _answered(addon, f)
                best[variant] = min(best[variant], (time.process_time() - t0) / len(flows))
                undo()
                addon.done()
    return best


# The events mitmproxy sends every addon for one HTTP/1 request on a kept-alive connection:
# requestheaders, request, responseheaders and response, each followed by an update (counted
# in a real mitmdump by an addon that answers every event name).
EVENTS_PER_REQUEST = 8


def dispatch_cost(rounds: int = 5, events: int = 5000) -> tuple[int, float, float]:
    """mitmproxy's cost of calling its addons: the number in mitmdump's chain (less its terminal
    log and flow printer, which print), the CPU µs one event takes through them, and how much
    more with one more addon that does nothing (`NOOP_ADDON`)."""
    import asyncio

    from mitmproxy import options
    from mitmproxy.proxy.layers.http import HttpRequestHeadersHook
    from mitmproxy.test import tflow
    from mitmproxy.tools.dump import DumpMaster

    script: dict[str, Any] = {}
    exec(NOOP_ADDON, script)  # the mix's no-op addon, as mitmdump -s loads it
    (noop,) = script["addons"]

    async def measure() -> tuple[int, float, float]:
        manager = DumpMaster(options.Options(), with_termlog=False, with_dumper=False).addons
        event = HttpRequestHeadersHook(tflow.tflow())
        best = {"plain": float("inf"), "noop": float("inf")}
        for _ in range(rounds):
            for variant in best:
                if variant == "noop":
                    manager.add(noop)
                start = time.process_time()
                for _ in range(events):
                    await manager.trigger_event(event)
                best[variant] = min(best[variant], (time.process_time() - start) / events)
                if variant == "noop":
                    manager.remove(manager.chain[-1])
        return len(manager.chain), best["plain"] * 1e6, (best["noop"] - best["plain"]) * 1e6

    return asyncio.run(measure())


def _hook_pass(variant: str, targets: list[bytes], passes: int, log: Path) -> None:
    """What `hook_instructions` counts: ``variant`` ("full" or "least", as `hook_parts` runs
    them) on a warm-up pass of ``targets`` and then ``passes`` more.  The flows of all three
    passes are made first, whatever ``passes``, so that making them cancels out."""
    from mitmproxy.test import taddons

    from urlsan.addon import UrlSanitizer

    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, urlsan_log=str(log))
        hook = addon.requestheaders if variant == "full" else _least_hook(addon.log)
        flows = [_flows(targets) for _ in range(3)]
        for batch in flows[: 1 + passes]:
            for f in batch:
                hook(f)
                _answered(addon, f)
        addon.done()


def hook_instructions(targets: list[bytes], tmp: Path) -> dict[str, float]:
    """Instructions per request of the whole hook and of the least hook, counted under
    callgrind as bench/guard.py counts them (bench/callgrind.py).  The load of a shared machine
    does not move them, as it moves CPU time."""
    items = tmp / "hook-targets.json"
    items.write_text(json.dumps([t.decode("utf-8", "surrogateescape") for t in targets]))
    script = str(Path(__file__).resolve())
    return {
        v: callgrind.per_item(
            [script, "--hook-worker", v, str(items), str(tmp / f"count-{v}.jsonl")], len(targets)
        )
        for v in ("full", "least")
    }


def scenario_hook(args: Any, tmp: Path) -> None:
    """The hook alone, by part, on dirty targets with the log on."""
    targets = mix_targets(max(1, args.requests // args.rounds), 1.0)
    cpu = hook_parts(targets, args.mode, tmp / "hook-parts.jsonl", args.hook_rounds)
    print(
        f"\nhook by part: {len(targets)} dirty targets, log on, urlsan_mode={args.mode}; "
        f"CPU µs per request (best of {args.hook_rounds} interleaved rounds; each part measured "
        "by stubbing it out)"
    )
    rows: list[tuple[object, ...]] = [
        (part, f"{(cpu[whole] - cpu[without]) * 1e6:.1f}") for part, whole, without in HOOK_PARTS
    ]
    rows.append(("whole hook", f"{(cpu['full'] - cpu['no hook']) * 1e6:.1f}"))
    rows.append(
        ("the least a hook can do (`_least_hook`)", f"{(cpu['least'] - cpu['no hook']) * 1e6:.1f}")
    )
    table(("part", "µs"), rows)
    least = cpu["least"] - cpu["no hook"]
    if least > 0:
        print(f"whole hook / least hook: {(cpu['full'] - cpu['no hook']) / least:.2f}x")
    if args.count:
        counted = hook_instructions(targets, tmp)
        print(
            f"instructions per request (callgrind): whole hook {counted['full']:,.0f}, least "
            f"hook {counted['least']:,.0f}: {counted['full'] / counted['least']:.2f}x"
        )
    chain, per_event, one_more = dispatch_cost()
    print(
        f"\nmitmproxy's addon chain ({chain} of mitmdump's addons, all but its terminal log and "
        f"flow printer): {per_event:.1f} µs of CPU per "
        f"event; one more addon that does nothing: +{one_more:.1f} µs per event, "
        f"{one_more * EVENTS_PER_REQUEST:.0f} µs per request ({EVENTS_PER_REQUEST} events)"
    )


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


# Huge targets a hostile client sends.  The "-under" ones and "dots" are at most
# urlsan_max_target's default (`MAX_TARGET`, 64 KiB), so that the addon canonicalizes them (in
# its worker process: they are over urlsan_max_inline); "ctl-over" is the megabyte target of
# issue #14 and "eacute" a megabyte of "é", both answered 414 (bytes never forwarded raw);
# "ascii-over" is a megabyte urlsan forwards unchanged, as mitmdump alone does.
_MIB = 1024 * 1024
HOSTILE = {
    "ctl-under": b"/" + b"\x01%" * (MAX_TARGET // 2 - 1) + b"x",
    "ctl-over": b"/" + b"\x01%" * (_MIB // 2),
    "eacute-under": b"/" + "é".encode() * (MAX_TARGET // 2 - 1) + b"x",
    "eacute": b"/" + "é".encode() * (_MIB // 2),
    "dots": b"/" + b"a/./../" * 9_000,
    "ascii-over": b"/" + b"a" * _MIB,
}
# The memory scenario cycles through these: over the limit and under it, in turn.
LARGE_MIX = ("eacute", "dots", "ctl-over", "eacute-under", "ascii-over", "ctl-under")


def send_once(port: int, target: bytes, timeout: float = 600) -> int:
    """One request on a fresh connection; the response status (0 if the connection failed)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: bench.local\r\n\r\n" % target)
            return int(read_response(s.makefile("rb")).split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def hostile_round(
    port: int, targets: list[bytes], connections: int, hostile: bytes
) -> tuple[list[float], int]:
    """``run_round`` while one more client sends ``hostile`` back to back: the others'
    latencies, and how many hostile requests were answered meanwhile.
    """
    stop = threading.Event()
    answered = [0]

    def attack() -> None:
        while not stop.is_set():
            if send_once(port, hostile):
                answered[0] += 1

    attacker = threading.Thread(target=attack, daemon=True)
    attacker.start()
    time.sleep(0.5)  # let the first hostile request arrive
    _, latencies = run_round(port, targets, connections)
    stop.set()
    attacker.join(600)
    return latencies, answered[0]


def rss_mib(pid: int) -> float:
    """Resident memory of a process, MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    pids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            pids += [int(c) for c in (task / "children").read_text().split()]
    return pids


def descendants_rss(pid: int) -> float:
    """The resident memory of every process ``pid`` started (the urlsan worker), MiB."""
    total, todo = 0.0, children(pid)
    while todo:
        child = todo.pop()
        try:
            total += rss_mib(child)
            todo += children(child)
        except OSError:
            pass
    return total


def memory_run(port: int, pid: int, count: int) -> list[tuple[int, float, float]]:
    """Send ``count`` huge requests, one by one; (requests done, RSS, workers' RSS) as they go."""
    samples = [(0, rss_mib(pid), descendants_rss(pid))]
    step = max(1, count // 10)
    for i in range(count):
        send_once(port, HOSTILE[LARGE_MIX[i % len(LARGE_MIX)]])
        if (i + 1) % step == 0 or i + 1 == count:
            samples.append((i + 1, rss_mib(pid), descendants_rss(pid)))
    return samples


def table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> None:
    cells = [tuple(str(c) for c in row) for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        first = row[0].ljust(widths[0])
        print("  ".join([first, *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]))
        if n == 0:
            print("  ".join("-" * w for w in widths))


# The mix's third proxy: mitmdump with an addon whose hook does nothing.  mitmproxy calls every
# addon of its chain for each event of a request (requestheaders, request, responseheaders,
# response, and an update after each), a few µs per addon and event whatever the addon does:
# this proxy's cost over plain mitmdump is that, urlsan's over it is urlsan's own.
NOOP = "mitmdump + no-op addon"
NOOP_ADDON = """
class Noop:
    def requestheaders(self, flow):
        return None


addons = [Noop()]
"""

# The targets the scenarios draw from: (clean, dirty).  `--targets fixed` keeps the two short
# lists above; `real` (the default) sets them from the corpora in `load_real_targets`.
POOLS: tuple[list[bytes], list[bytes]] = (CLEAN, DIRTY)


def mix_targets(n: int, dirty: float) -> list[bytes]:
    clean_pool, dirty_pool = POOLS
    n_dirty = round(n * dirty)
    targets = [dirty_pool[i % len(dirty_pool)] for i in range(n_dirty)]
    targets += [clean_pool[i % len(clean_pool)] for i in range(n - n_dirty)]
    return [targets[(i * 7919) % n] for i in range(n)]  # spread them out


def load_real_targets(corpus_dir: Path, count: int = 20_000) -> tuple[list[bytes], list[bytes]]:
    """Origin-form targets as varied as real traffic: the paths and queries of ``count`` URLs
    of bench/core.py's corpora as they are, and the same made dirty as bench/core.py makes them
    (case, escapes of unreserved characters, lower-case hex, dot segments and ``%2e``, raw
    excluded characters and UTF-8: RFC 3986 §6.2.2-6.2.3).  Only what one token of a request
    line can carry: mitmproxy answers a target with white space or a control 400 before any
    addon sees it.  As they are, most real targets have nothing to rewrite, some do."""
    from bench.core import dirty, load

    rng = random.Random(3)
    urls = rng.sample(load(corpus_dir), count)
    pools: tuple[list[bytes], list[bytes]] = ([], [])
    for url in urls:
        for pool, text in zip(pools, (url, dirty(url, rng)), strict=True):
            rest = text.partition("://")[2]
            slash, path = rest.partition("/")[1:]
            target = (slash + path or "/").encode("utf-8", "surrogateescape")
            if not any(b <= 0x20 or b == 0x7F for b in target):
                pool.append(target)
    return pools


def scenario_mix(
    procs: dict[str, tuple[subprocess.Popen[bytes], int]], targets: list[bytes], args: Any
) -> float:
    """The mix scenario; prints its table, returns mitmdump's CPU seconds per request."""
    elapsed = dict.fromkeys(procs, 0.0)
    cpu_start = {name: cpu_seconds(p.pid) for name, (p, _) in procs.items()}
    latencies: dict[str, list[float]] = {name: [] for name in procs}
    ratios = []  # per round: urlsan's CPU over mitmdump's, for the spread of the overhead
    args.mix_window = (time.perf_counter_ns(), 0)
    for r in range(args.rounds):
        order = list(procs) if r % 2 == 0 else list(reversed(procs))
        used = {}
        for name in order:
            before = cpu_seconds(procs[name][0].pid)
            seconds, lat = run_round(procs[name][1], targets, args.connections)
            used[name] = cpu_seconds(procs[name][0].pid) - before
            elapsed[name] += seconds
            latencies[name] += lat
        if used["mitmdump"]:
            ratios.append(used["mitmdump + urlsan"] / used["mitmdump"])
    args.mix_window = (args.mix_window[0], time.perf_counter_ns())
    cpu = {name: cpu_seconds(p.pid) - cpu_start[name] for name, (p, _) in procs.items()}
    print(
        f"\nmix: {len(targets) * args.rounds} requests per configuration, {args.rounds} "
        f"interleaved rounds, {args.connections} keep-alive connections, {args.dirty:.0%} dirty"
    )
    rows: list[tuple[object, ...]] = []
    rps = {}
    for name in procs:
        rps[name] = len(latencies[name]) / elapsed[name]
        rows.append(
            (
                name,
                f"{rps[name]:.0f}",
                f"{statistics.median(latencies[name]) * 1000:.2f}",
                f"{percentile(latencies[name], 99) * 1000:.2f}",
                f"{cpu[name] / len(latencies[name]) * 1e6:.0f}",
            )
        )
    table(("", "req/s", "p50 ms", "p99 ms", "CPU µs/req"), rows)
    base, with_addon = rps["mitmdump"], rps["mitmdump + urlsan"]
    cpu_overhead = (cpu["mitmdump + urlsan"] / cpu["mitmdump"] - 1) * 100
    print(
        f"throughput ratio {with_addon / base:.3f} (overhead {(1 - with_addon / base) * 100:+.1f}%)"
        f"; proxy CPU per request {cpu_overhead:+.1f}%"
    )
    if NOOP in cpu:
        print(
            f"proxy CPU per request: {NOOP} {(cpu[NOOP] / cpu['mitmdump'] - 1) * 100:+.1f}% "
            f"(mitmproxy's own cost of one more addon), urlsan over that "
            f"{(cpu['mitmdump + urlsan'] / cpu[NOOP] - 1) * 100:+.1f}%"
        )
    if ratios:
        ratios.sort()
        print(
            f"proxy CPU per round, urlsan / mitmdump: median {statistics.median(ratios):.3f}, "
            f"rounds from {ratios[0]:.3f} to {ratios[-1]:.3f}"
        )
    return cpu["mitmdump"] / len(latencies["mitmdump"])


def scenario_hostile(
    procs: dict[str, tuple[subprocess.Popen[bytes], int]], targets: list[bytes], args: Any
) -> None:
    """`hostile_shape` for each ``--hostile`` shape, then the ratios side by side."""
    ratios = {shape: hostile_shape(procs, targets, args, shape) for shape in args.hostile}
    print("\nother clients' p99 with urlsan / without, by hostile shape (goal: 1.5x or less):")
    for shape, ratio in ratios.items():
        print(f"  {shape:<13} {len(HOSTILE[shape]):>9,} bytes  {ratio:.2f}x")


def hostile_shape(
    procs: dict[str, tuple[subprocess.Popen[bytes], int]],
    targets: list[bytes],
    args: Any,
    shape: str,
) -> float:
    """The other clients' latencies while one sends ``shape``; their p99 ratio, urlsan over
    mitmdump alone."""
    hostile = HOSTILE[shape]
    print(
        f"\nhostile: {len(targets)} mix requests on {args.connections} connections per "
        f"configuration and round, while one more client sends {shape} targets "
        f"({len(hostile):,} bytes) back to back; quiet: the same without it; "
        f"{args.hostile_rounds} rounds, the configurations alternating"
    )
    quiet: dict[str, list[float]] = {name: [] for name in procs}
    loud: dict[str, list[float]] = {name: [] for name in procs}
    answered = dict.fromkeys(procs, 0)
    for r in range(args.hostile_rounds):
        for name in list(procs) if r % 2 == 0 else list(reversed(procs)):
            port = procs[name][1]
            quiet[name] += run_round(port, targets, args.connections)[1]
            latencies, n = hostile_round(port, targets, args.connections, hostile)
            loud[name] += latencies
            answered[name] += n
    rows: list[tuple[object, ...]] = [
        (
            name,
            f"{percentile(quiet[name], 99) * 1000:.1f}",
            f"{statistics.median(loud[name]) * 1000:.1f}",
            f"{percentile(loud[name], 99) * 1000:.1f}",
            f"{max(loud[name]) * 1000:.0f}",
            answered[name],
        )
        for name in procs
    ]
    table(("", "quiet p99 ms", "p50 ms", "p99 ms", "max ms", "hostile answered"), rows)
    ratio = percentile(loud["mitmdump + urlsan"], 99) / percentile(loud["mitmdump"], 99)
    print(f"other clients' p99 with urlsan / without: {ratio:.2f}x (goal: 1.5x or less)")
    return ratio


def scenario_memory(procs: dict[str, tuple[subprocess.Popen[bytes], int]], args: Any) -> None:
    print(
        f"\nmemory: {args.large} huge requests, one at a time, cycling through "
        f"{', '.join(LARGE_MIX)}; resident memory, MiB"
    )
    runs = {name: memory_run(port, p.pid, args.large) for name, (p, port) in procs.items()}
    base, addon = runs["mitmdump"], runs["mitmdump + urlsan"]
    rows = [
        (n, f"{b_rss:.0f}", f"{a_rss:.0f}", f"{a_workers:.0f}")
        for (n, b_rss, _), (_, a_rss, a_workers) in zip(base, addon, strict=True)
    ]
    table(("requests", "mitmdump", "+ urlsan", "urlsan worker"), rows)


def run_proxies(args: Any, scenarios: tuple[str, ...], tmp: Path, targets: list[bytes]) -> float:
    """The scenarios through real mitmdumps; mitmdump's CPU seconds per request (mix), or 0."""
    upstream, port = upstream_process()
    origin = f"http://127.0.0.1:{port}"
    common = ["--mode", f"reverse:{origin}", "--listen-host", "127.0.0.1", "-p", "0"]
    common += ["--set", "flow_detail=0"]  # no per-flow output; keep the listening line
    common += ["--set", f"confdir={tmp / 'conf'}"]
    times = tmp / "hook-times.json"
    code = f"TIMES = {str(times)!r}\n{HOOK_TIMER}\n" if "mix" in scenarios else ""
    code += (
        "import sys; from urlsan.cli.proxy import proxy_main; sys.exit(proxy_main(sys.argv[1:]))"
    )
    addon_options = {"urlsan_mode": args.mode, "urlsan_log": str(tmp / "audit.jsonl")}
    addon_options.update(kv.split("=", 1) for kv in args.addon_set)
    noop = tmp / "noop_addon.py"
    noop.write_text(NOOP_ADDON)
    configs = {
        "mitmdump": mitmdump_command(*common),
        NOOP: mitmdump_command(*common, "-s", str(noop)),
        "mitmdump + urlsan": [
            sys.executable, "-c", code, *common,
            *(x for kv in addon_options.items() for x in ("--set", "=".join(kv))),
        ],
    }  # fmt: skip
    if "mix" not in scenarios:
        del configs[NOOP]  # only the mix compares it
    procs = {}
    running: list[Mitmdump] = []
    base_cpu = 0.0
    try:
        for name, argv in configs.items():
            running.append(mitmdump := Mitmdump(argv, cwd=tmp))
            try:
                mitmdump.start()
            except RuntimeError as e:
                raise SystemExit(f"{name} did not start: {' '.join(argv)}\n{e}") from e
            assert mitmdump.process is not None
            procs[name] = (mitmdump.process.popen, mitmdump.port)
        for _, port in procs.values():  # warm up: connections, caches, imports
            run_round(port, targets[:200], args.connections)
        if "mix" in scenarios:
            base_cpu = scenario_mix(procs, targets, args)
        two = {name: procs[name] for name in ("mitmdump", "mitmdump + urlsan")}
        if "hostile" in scenarios:
            scenario_hostile(two, mix_targets(args.requests // 2, args.dirty), args)
        if "memory" in scenarios:
            scenario_memory(two, args)
        log = tmp / "audit.jsonl"
        logged = len(log.read_bytes().splitlines()) if log.exists() else 0
    finally:
        for mitmdump in running:
            mitmdump.stop()
        upstream.kill()
        upstream.join()
    print(f"{logged} audit records written")
    if "mix" in scenarios and times.exists():
        hook_in_proxy(json.loads(times.read_text()), args.mix_window, base_cpu)
    return base_cpu


def hook_in_proxy(samples: list[list[Any]], window: tuple[int, int], base_cpu: float) -> None:
    """The hook's wall time per request inside the running proxy, over the mix rounds."""
    start, end = window
    kinds: dict[str, list[float]] = {"unchanged": [], "rewritten": [], "all": []}
    for at, ns, action in samples:
        if start <= at <= end:
            kinds["all"].append(ns / 1000)
            kinds.setdefault(action, []).append(ns / 1000)
    print(
        "\naddon hook in the running proxy (mix rounds), wall µs per request: median, and the mean "
        "of the fastest 90% (a busy machine preempts the rest)"
    )
    rows: list[tuple[object, ...]] = []
    for kind, values in kinds.items():
        if values:
            values.sort()
            fast = values[: max(1, len(values) * 9 // 10)]
            rows.append(
                (
                    kind,
                    len(values),
                    f"{statistics.median(values):.1f}",
                    f"{statistics.mean(fast):.1f}",
                )
            )
    table(("action", "requests", "median", "mean (fastest 90%)"), rows)
    if base_cpu and kinds["all"]:
        fast = sorted(kinds["all"])[: max(1, len(kinds["all"]) * 9 // 10)]
        share = statistics.mean(fast) * 1e-6 / base_cpu * 100
        print(f"that is {share:.1f}% of mitmdump's {base_cpu * 1e6:.0f} µs CPU per request")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--scenario", choices=("mix", "hostile", "memory", "hook", "all"), default="all"
    )
    parser.add_argument("--requests", type=int, default=4000, help="per configuration (mix)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--mode", default="rewrite", help="urlsan_mode for the addon run")
    parser.add_argument("--dirty", type=float, default=0.5, help="fraction of targets made dirty")
    parser.add_argument(
        "--hostile",
        nargs="+",
        choices=list(HOSTILE),
        default=list(HOSTILE),
        help="the hostile client's target shapes, one after the other (default: all)",
    )
    parser.add_argument("--hostile-rounds", type=int, default=2, help="rounds (hostile)")
    parser.add_argument(
        "--hook-rounds",
        type=int,
        default=5,
        help="interleaved rounds of the hook by part, the best of which is kept (hook); more "
        "on a busy machine",
    )
    parser.add_argument("--large", type=int, default=1000, help="huge requests (memory)")
    parser.add_argument(
        "--addon-set",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="more --set options for the addon run (e.g. urlsan_log= to measure without a log)",
    )
    parser.add_argument(
        "--targets",
        choices=("real", "fixed"),
        default="real",
        help="real: paths of the corpora's URLs, half of them made dirty (default); fixed: "
        f"{len(CLEAN)} clean and {len(DIRTY)} dirty targets written out here",
    )
    parser.add_argument(
        "--corpus-dir",
        type=Path,
        default=Path(__file__).resolve().parent.parent.parent / "shared" / "data",
        help="where bench/core.py's corpora are (--targets real)",
    )
    parser.add_argument(
        "--count",
        action="store_true",
        help="count the whole and the least hook's instructions per request under callgrind "
        "too (hook; valgrind, a few minutes)",
    )
    parser.add_argument("--hook-worker", nargs=4, help=argparse.SUPPRESS)  # hook_instructions'
    args = parser.parse_args()
    if args.hook_worker:
        variant, items, log, passes = args.hook_worker
        targets = [
            t.encode("utf-8", "surrogateescape") for t in json.loads(Path(items).read_text())
        ]
        _hook_pass(variant, targets, int(passes), Path(log))
        return 0
    global POOLS
    if args.targets == "real":
        POOLS = load_real_targets(args.corpus_dir)
    scenarios = ("mix", "hostile", "memory", "hook") if args.scenario == "all" else (args.scenario,)
    targets = mix_targets(max(1, args.requests // args.rounds), args.dirty)
    log_on = dict(kv.split("=", 1) for kv in args.addon_set).get("urlsan_log", "x") != ""
    print(
        f"urlsan_mode={args.mode}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"--addon-set {' '.join(args.addon_set) or '(none)'}, --targets {args.targets} "
        f"({len(POOLS[0]):,} clean, {len(POOLS[1]):,} dirty)"
    )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base_cpu = 0.0
        if {"mix", "hostile", "memory"} & set(scenarios):
            base_cpu = run_proxies(args, scenarios, tmp, targets)
        if "hook" in scenarios:
            scenario_hook(args, tmp)
        hook_log = (tmp / "hook.jsonl") if log_on else None
        dirty_only = mix_targets(len(targets), 1.0)
        hook = hook_cpu(targets, args.mode, hook_log)
        hook_dirty = hook_cpu(dirty_only, args.mode, hook_log)
        hook_off = hook_cpu(targets, args.mode, None)
        hook_dirty_off = hook_cpu(dirty_only, args.mode, None)

    print("\naddon hook alone (in-process, best of 5 passes), CPU µs per request")
    rows: list[tuple[object, ...]] = [
        (f"{args.dirty:.0%} dirty mix", f"{hook * 1e6:.1f}", f"{hook_off * 1e6:.1f}"),
        ("dirty targets only", f"{hook_dirty * 1e6:.1f}", f"{hook_dirty_off * 1e6:.1f}"),
    ]
    table(("", "log on", "log off"), rows)
    if base_cpu:
        print(f"mix, log on: {hook / base_cpu * 100:.1f}% of mitmdump's {base_cpu * 1e6:.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
