"""A raw HTTP/1.1 origin on 127.0.0.1 that records every request head it receives.

A socket server, not an HTTP library: it records the request line exactly as the bytes arrived,
which is what the tests through the proxy look at.  Every request gets ``200 ok``, on a
kept-alive connection.  In a thread of this process (`upstream_server`), or in a process of
its own (`upstream_process`, for the benchmark).
"""

from __future__ import annotations

import socketserver
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import BufferedIOBase
from pathlib import Path
from typing import Any

from .ports import LOOPBACK
from .serving import ServerThread
from .tls import self_signed

_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"


@dataclass
class Received:
    request_line: bytes
    headers: list[tuple[bytes, bytes]]

    @property
    def target(self) -> bytes:
        return self.request_line.split(b" ")[1]

    def header(self, name: bytes) -> bytes | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


@dataclass
class Upstream:
    """The origin's address and what it received (``record``: keep it; the benchmark does not)."""

    port: int
    tls: bool
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    record: bool = True

    def take(self) -> list[Received]:
        with self.lock:
            got, self.received[:] = list(self.received), []
        return got

    @property
    def origin(self) -> str:
        return f"{'https' if self.tls else 'http'}://{LOOPBACK}:{self.port}"


def _read_head(f: BufferedIOBase) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
    line = f.readline(65536)
    if not line:
        return None
    headers = []
    while True:
        h = f.readline(65536)
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.rstrip(b"\r\n").partition(b":")
        headers.append((name, value.strip()))
    return line.rstrip(b"\r\n"), headers


def _handler(upstream: Upstream) -> type[socketserver.StreamRequestHandler]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            while True:
                try:
                    head = _read_head(self.rfile)
                except (OSError, ssl.SSLError):
                    return
                if head is None:
                    return
                line, headers = head
                if upstream.record:
                    with upstream.lock:
                        upstream.received.append(Received(line, headers))
                length = 0
                for k, v in headers:
                    if k.lower() == b"content-length":
                        length = int(v)
                if length:
                    self.rfile.read(length)
                self.wfile.write(_RESPONSE)
                self.wfile.flush()

    return Handler


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _server(record: bool = True) -> tuple[_Server, Upstream]:
    server = _Server((LOOPBACK, 0), socketserver.StreamRequestHandler, bind_and_activate=True)
    upstream = Upstream(server.server_address[1], tls=False, record=record)
    server.RequestHandlerClass = _handler(upstream)
    return server, upstream


@contextmanager
def upstream_server(tmp: Path | None = None) -> Iterator[Upstream]:
    """The origin in a thread; with ``tmp``, it speaks TLS (HTTP/1.1 only) with a self-signed
    certificate written there."""
    server, upstream = _server()
    if tmp is not None:
        upstream.tls = True
        cert, key = self_signed(tmp)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["http/1.1"])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    with ServerThread(server, poll_interval=0.05):
        yield upstream


def _serve(pipe: Any) -> None:
    server, upstream = _server(record=False)
    pipe.send(upstream.port)
    server.serve_forever()


def upstream_process() -> tuple[Any, int]:
    """The origin, not recording, in a process of its own (spawned, a daemon), and its port.

    Not a thread of the caller: it reads every request the proxies forward, a hostile one of
    megabytes too, and in the caller it would hold the GIL that the clients timing the other
    requests wait for.  The caller ends it (``kill()``, ``join()``)."""
    import multiprocessing

    mine, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(theirs,), daemon=True
    )
    process.start()
    port: int = mine.recv()
    return process, port
