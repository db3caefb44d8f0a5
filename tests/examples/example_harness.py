"""What the example tests share: a small origin site that records the request-targets it
receives, a way to run an example proxy script until the test is done with it, and the URL
list the cluster jobs (Dask, Spark) read and write.

(A plain module, not conftest.py, so that the tests can import its names.)
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BIN = Path(sys.executable).parent  # the venv's bin/: `urlsan`, `mitmdump`

# A site whose links are written the way real pages write them: escapes of unreserved
# characters, dot segments, lower-case escapes, tracking parameters.  (`requests` fixes the first
# three on its own, through a proxy too; Scrapy sends them as the page wrote them.)
PAGES: dict[str, str] = {
    "/": '<a href="/%7Eguide/./intro">guide</a> <a href="/docs/../about">about</a> '
    '<a href="/search?utm_source=feed&q=a%2fb&a=1">search</a> '
    '<a href="/search?q=a%2fb&a=1&fbclid=xyz">search again</a> '
    '<a href="http://elsewhere.invalid/">out</a>',
    "/~guide/intro": '<a href="/~guide/intro">self</a> <a href="/about">about</a>',
    "/about": "<p>about</p>",
    "/search": "<p>results</p>",
}


class Origin:
    """Records every request-target exactly as it arrived on the wire."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        origin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                origin.targets.append(self.path)  # the raw request-target
                page = PAGES.get(self.path.split("?")[0])
                body = (page or "<p>not found</p>").encode()
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Origin:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def example_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        env.pop(name, None)
    env["NO_PROXY"] = env["no_proxy"] = ""
    env.update(extra)
    return env


def require_proxy() -> None:
    """Skip cleanly while the addon (or mitmproxy) is not there."""
    try:
        import urlsan.cli.proxy  # noqa: F401
    except ImportError as e:
        pytest.skip(f"urlsan proxy not available: {e}")
    pytest.importorskip("mitmproxy", reason="urlsan proxy needs mitmproxy")
    if shutil.which("bash") is None:
        pytest.skip("the proxy examples are bash scripts")


@contextmanager
def running(script: str, tmp: Path, *args: str, **env: str) -> Iterator[int]:
    """Run ``examples/script args`` (a proxy) on a free port until the block ends; yield the
    port."""
    require_proxy()
    port = free_port()
    log = tmp / f"{script}.out"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", str(EXAMPLES / script), *args],
            cwd=tmp,
            env=example_env(PORT=str(port), **env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"{script} did not start:\n{log.read_text()}")
                    time.sleep(0.1)
            yield port
        finally:
            os.killpg(proc.pid, signal.SIGINT)  # mitmdump shuts down cleanly on ^C
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


# The input of the cluster examples: dirty spellings of three URLs, a blank line, and the
# reserved escape "%2F" that must stay apart from "/".
URLS = [
    "HTTP://Example.COM:80/%7Eguide/./intro",
    "http://example.com/~guide/intro?utm_source=feed#top",
    "",
    "http://example.com/a%2fb?b=2&a=1",
    "http://example.com/a%2Fb?a=1&b=2",
    "http://other.test/x/../y",
]


def write_url_parts(tmp: Path) -> Path:
    """URLS as two input parts, one plain and one gzipped; returns their glob pattern."""
    inputs = tmp / "urls"
    inputs.mkdir()
    (inputs / "part-0.txt").write_text("\n".join(URLS[:3]) + "\n")
    (inputs / "part-1.txt.gz").write_bytes(gzip.compress("\n".join(URLS[3:]).encode()))
    return inputs / "part-*"


def read_url_parts(out: Path) -> list[str]:
    """Every line of a job's gzipped output parts, sorted."""
    return sorted(
        line
        for part in out.glob("part-*.txt.gz")
        for line in gzip.decompress(part.read_bytes()).decode().splitlines()
    )
