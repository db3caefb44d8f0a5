"""``urlsan audit`` of access logs a block at a time (cli/audit_lines.py) and in ``--jobs``
workers: the records, in their order, and the unreadable lines are those of the reader that
takes one line at a time (`sources.read_access_log`) and decides each request (`Auditor`)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from cli_harness import URLSAN, RunUrlsan, worker_pids

from urlsan.addon.options import AUDIT
from urlsan.audit import record, sources
from urlsan.cli import batch
from urlsan.cli.audit import auditor_for
from urlsan.cli.audit_lines import LogLines
from urlsan.cli.blocks import Block
from urlsan.cli.flags import values
from urlsan.cli.main import build_parser
from urlsan.cli.status import EXIT_BAD_LINES, EXIT_OK, EXIT_WORKER_DIED

_TARGETS = [
    "/", "/index.html", "/a/b/c?x=1&y=2", "/search?q=caf%C3%A9", "/~user/", "/%7Euser/",
    "/a/./b/../c", "/a%2fb", "/A%2a", "/x?utm_source=a&id=1", "/p#frag", "/a//b", "/%zz",
    "/a%00b", "/.%2e/x", "/foo;jsessionid=1", "/a?b", "/?", "/a/%2e%2E/b", "/caf\\xC3\\xA9",
    "/q?a=\\x22b\\x22", "/sp ace", "http://Example.COM:80/x", "https://h/a/../b", "*",
    "/x?X-Amz-Signature=abc&X-Amz-Credential=z", "/" + "a" * 300, "/ok/" * 20,
]  # fmt: skip


def _line(rng: random.Random, i: int) -> str:
    """A log line: mostly the common shape, some with a virtual host, CRLF, odd requests."""
    target = rng.choice(_TARGETS)
    method = rng.choice(("GET", "GET", "GET", "POST", "HEAD", "OPTIONS", "CONNECT"))
    version = rng.choice((" HTTP/1.1", " HTTP/1.1", " HTTP/2.0", " HTTP/1.0", ""))
    when = f"{i % 28 + 1:02d}/Nov/2026:10:{i % 60:02d}:{i * 7 % 60:02d} +0100"
    status = rng.choice(("200", "304", "404", "-"))
    host = rng.choice(("", "", "", "", "shop.example:443 ", "EXAMPLE.org "))
    r = rng.random()
    if r < 0.01:
        return ""
    if r < 0.02:
        return "this is no log line"
    if r < 0.03:
        return f'10.0.0.1 - - [{when}] "\\x16\\x03\\x01" 400 0 "-" "-"'
    line = f'{host}10.0.{i % 4}.{i % 250} - - [{when}] "{method} {target}{version}" {status} 12'
    return line + (' "-" "curl/8"\r' if r < 0.05 else ' "-" "Mozilla/5.0"')


def _log(path: Path, count: int, seed: int = 5, end: str = "\n") -> None:
    rng = random.Random(seed)
    path.write_text("\n".join(_line(rng, i) for i in range(count)) + end, encoding="latin-1")


def _one_at_a_time(path: Path, *options: str) -> tuple[bytes, int, int, list[str]]:
    """What `urlsan audit` wrote before blocks: records, requests, unreadable lines (each
    counted) and the first five, from `sources.read` and `Auditor.check` line by line."""
    args = build_parser().parse_args(["audit", *options, str(path)])
    auditor = auditor_for(values(args, AUDIT))
    out, requests, bad = [], 0, []
    with sources.open_source(str(path)) as stream:
        for item in sources.read(stream, "access-log", str(path)):
            if isinstance(item, sources.Unreadable):
                bad.append(f"{item.where}: {item.why}")
                continue
            requests += 1
            rec = auditor.check(item)
            if rec is not None:
                out.append(record.serialize(rec, auditor.redactor))
    return b"".join(out), requests, len(bad), bad[:5]


@pytest.fixture
def eager_pool() -> Iterator[list[int]]:
    """Workers from the first block on, each reading small spans; lists each pool's size."""
    started: list[int] = []
    names = ("POOL_START_BYTES", "POOL_BLOCK_BYTES", "_pooled")
    saved = [getattr(batch, name) for name in names]

    def pooled(first: Block, blocks: Iterator[Block], work: Any, jobs: int) -> Any:
        started.append(jobs)
        return saved[-1](first, blocks, work, jobs)

    # Set by hand: the runner's monkeypatch.undo() would undo a monkeypatch made here.
    for name, value in zip(names, (0, 20_000, pooled), strict=True):
        setattr(batch, name, value)
    try:
        yield started
    finally:
        for name, value in zip(names, saved, strict=True):
            setattr(batch, name, value)


_OPTIONS = (
    (),
    ("--mode", "reject"),
    ("--mode", "rewrite", "--profile", "crawler"),
    ("--mode", "redirect", "--max-target", "200"),
    ("--backends", "nginx"),
    ("--drop-params", "utm_*", "--signed", "rewrite"),
)


@pytest.mark.parametrize("options", _OPTIONS, ids=lambda o: " ".join(o) or "default")
def test_blocks_and_jobs_write_the_records_of_one_line_at_a_time(
    urlsan: RunUrlsan, tmp_path: Path, eager_pool: list[int], options: tuple[str, ...]
) -> None:
    log = tmp_path / "access.log"
    _log(log, 6_000)
    records, requests, unreadable, examples = _one_at_a_time(log, *options)
    one = urlsan("audit", "--jobs", "1", *options, str(log))
    two = urlsan("audit", "--jobs", "2", *options, str(log))
    assert eager_pool == [2]  # `--jobs 1` started none
    assert one.out == records and two.out == records
    assert one.err == two.err and one.status == two.status == EXIT_BAD_LINES
    written = records.count(b"\n")
    assert f"{requests:,} requests checked, {written:,} audit" in one.err
    assert f"{unreadable:,} unreadable lines" in one.err
    assert one.err.splitlines()[-5:] == [f"  {e}" for e in examples]
    assert not worker_pids(os.getpid())


def test_the_last_line_cut_short_is_told_so(urlsan: RunUrlsan, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a/./b HTTP/1.1" 200 1\n1.2.')
    records, _, _, examples = _one_at_a_time(log)
    run = urlsan("audit", str(log))
    assert run.out == records and run.status == EXIT_BAD_LINES
    assert examples == [f"{log}:2: {sources.CUT_LINE}"]
    assert run.err.splitlines()[-1] == f"  {examples[0]}"


def test_a_gzip_log_cut_short_is_told_with_its_last_line(urlsan: RunUrlsan, tmp_path: Path) -> None:
    import gzip

    log = tmp_path / "access.log"
    for count, seed in ((3_000, 5), (60, 1), (60, 2), (60, 3)):
        _log(log, count, seed)
        packed = gzip.compress(log.read_bytes())
        torn = tmp_path / "torn.log.gz"
        torn.write_bytes(packed[: len(packed) * 2 // 3])
        records, requests, unreadable, examples = _one_at_a_time(torn)
        run = urlsan("audit", str(torn))
        assert run.out == records and run.status == EXIT_BAD_LINES
        assert f"{unreadable:,} unreadable" in run.err and f"{requests:,} requests" in run.err
        assert run.err.splitlines()[-len(examples) :] == [f"  {e}" for e in examples]
        if count < 100:
            assert "the gzip data ends at" in examples[-1]


def test_log_lines_pickle_for_a_spawned_worker(tmp_path: Path) -> None:
    """A spawned worker gets `LogLines` pickled: made again from the options."""
    import pickle

    log = tmp_path / "access.log"
    _log(log, 500)
    args = build_parser().parse_args(["audit", "--mode", "reject", str(log)])
    given = values(args, AUDIT)
    lines = LogLines(auditor_for(given), auditor_for, (given,))
    again = pickle.loads(pickle.dumps(lines))
    block = Block(log.read_bytes(), 1)
    assert again(block) == lines(block)
    assert again.auditor.settings.mode == "reject"


def _peak(urlsan: RunUrlsan, *argv: str) -> int:
    tracemalloc.start()
    try:
        assert urlsan("audit", "-q", *argv).status in (EXIT_OK, EXIT_BAD_LINES)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_stays_flat(urlsan: RunUrlsan, tmp_path: Path) -> None:
    """5× the lines, not 5× the memory (bench/audit.py measures the RSS of 2,000,000)."""
    small, large = tmp_path / "small.log", tmp_path / "large.log"
    _log(small, 20_000)
    _log(large, 100_000)
    out = str(tmp_path / "out.jsonl")
    _peak(urlsan, "-o", out, str(small))  # warm caches (lru_cache, regexes) first
    peak_small = _peak(urlsan, "-o", out, str(small))
    peak_large = _peak(urlsan, "-o", out, str(large))
    assert peak_large < 1.5 * peak_small + 256 * 1024, (peak_small, peak_large)


def _feed_forever(stdin: IO[bytes], stop: threading.Event) -> None:
    rng = random.Random(3)
    chunk = "".join(_line(rng, i) + "\n" for i in range(2_000)).encode("latin-1")
    try:
        while not stop.is_set():
            stdin.write(chunk)
    except (BrokenPipeError, ValueError, OSError):
        pass


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds workers through /proc")
def test_a_dead_worker_ends_the_run_with_one_line() -> None:
    proc = subprocess.Popen(
        [*URLSAN, "audit", "--jobs", "2", "--format", "access-log", "-q", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stderr is not None
    stop = threading.Event()
    threading.Thread(target=_feed_forever, args=(proc.stdin, stop), daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        while len(workers := worker_pids(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2, "the workers did not start"
        time.sleep(0.3)
        os.kill(workers[0], signal.SIGKILL)
        status = proc.wait(timeout=30)  # the input never ends: only the error stops the run
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert status == EXIT_WORKER_DIED
    assert err == (
        "urlsan audit: error: a worker process died (killed, or out of memory): "
        "the records are incomplete\n"
    )


def test_blocks_alone_match_one_line_at_a_time(tmp_path: Path) -> None:
    """`LogLines` on blocks cut anywhere between lines, numbered from 1 or not at all."""
    log = tmp_path / "access.log"
    _log(log, 2_000, seed=9)
    args = build_parser().parse_args(["audit", str(log)])
    given = values(args, AUDIT)
    lines = LogLines(auditor_for(given), auditor_for, (given,))
    records, requests, unreadable, _ = _one_at_a_time(log)
    data = log.read_bytes().split(b"\n")[:-1]
    got, count, bad, number = [], 0, [], 1
    for start in range(0, len(data), 333):
        part = data[start : start + 333]
        done = lines(Block(b"\n".join(part) + b"\n", number))
        assert done.lines == len(part)
        got += done.pieces
        count += done.valid
        bad += done.bad
        number += done.lines
    assert b"".join(got) == records and count == requests and len(bad) == unreadable


_TRICKY = [
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1',
    b'vh:80 1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1',
    b'vh 1.2.3.4 - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1 "-" "x"',
    b'a b c d [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" - 1',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1\r',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a b HTTP/1.1" 200 1',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "get /a\tb HTTP/9" 200 1',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36] "GET /a HTTP/1.1" 200 1',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "CONNECT /a HTTP/1.1" 200 1',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] [x] "GET /a HTTP/1.1" 200 1',
    b'1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1 "-" "a \\" b"',
    b'  1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1',
    b"",
    b"   ",
]


@pytest.mark.parametrize("line", _TRICKY)
def test_a_line_in_fields_reads_as_the_line_alone(line: bytes) -> None:
    """What `sources.LINES` takes apart gives the `Request` `sources.access_line` reads."""
    rows = sources.LINES.findall(line + b"\n")
    assert len(rows) == 2 and rows[-1] == (b"",) * 8
    vhost, client, time, method, target, version, status, other = rows[0]
    alone = sources.access_line(line + b"\n", "")
    if not target:
        assert other == line.rstrip(b"\r") or other == line
        return
    assert alone == sources.Request(
        ts=sources.clf_time(time),
        client=client.decode(),
        method=method.decode(),
        scheme="",
        host=vhost.decode() or None,
        target=target,
        http_version=version.decode(),
        where="",
        status=None if status == b"-" else int(status),
    )


def _flow_file(path: Path, count: int) -> list[int]:
    """A flow file of HTTP flows (some CONNECTs, some TCP flows) for the targets above; the
    offset where each flow ends."""
    mio = pytest.importorskip("mitmproxy.io")
    from mitmproxy.test import tflow, tutils

    rng, ends = random.Random(4), []
    with path.open("wb") as f:
        writer = mio.FlowWriter(f)
        for i in range(count):
            if i % 37 == 5:
                writer.add(tflow.ttcpflow())
            else:
                target = rng.choice(_TARGETS).encode("latin-1")
                method = b"CONNECT" if i % 41 == 7 else b"GET"
                req = tutils.treq(path=target if target.startswith(b"/") else b"/x", method=method)
                writer.add(tflow.tflow(req=req, resp=i % 3 != 0))
            ends.append(f.tell())
    return ends


@pytest.mark.parametrize("damage", ["whole", "cut", "garbage", "no-flow"])
def test_flow_files_in_spans_give_the_records_of_one_process(
    urlsan: RunUrlsan, tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urlsan.cli import audit_flows

    flows = tmp_path / "traffic.flows"
    ends = _flow_file(flows, 400)
    data = flows.read_bytes()
    middle = ends[250]
    if damage == "cut":
        data = data[: ends[-1] - 100]
    elif damage == "garbage":
        data = data[:middle] + b"xx" + data[middle:]
    elif damage == "no-flow":  # whole tnetstring data that holds no flow's state
        data = data[:middle] + b"5:hello," + data[middle:]
    flows.write_bytes(data)
    records, requests = [], 0
    args = build_parser().parse_args(["audit", str(flows)])
    auditor = auditor_for(values(args, AUDIT))
    bad = []
    with sources.open_source(str(flows)) as stream:
        for item in sources.read(stream, "flows", str(flows)):
            if isinstance(item, sources.Unreadable):
                bad.append(f"  {item.where}: {item.why}")
                continue
            requests += 1
            rec = auditor.check(item)
            if rec is not None:
                records.append(record.serialize(rec, auditor.redactor))
    one = urlsan("audit", str(flows))
    monkeypatch.setattr(audit_flows, "SPAN_BYTES", 20_000)  # dozens of spans
    two = urlsan("audit", "--jobs", "2", str(flows))
    assert one.out == two.out == b"".join(records)
    assert one.err == two.err and one.status == two.status
    assert f"{requests:,} requests checked" in two.err
    assert two.err.splitlines()[2:] == bad
    assert (damage == "whole") == (not bad)
    assert not worker_pids(os.getpid())
