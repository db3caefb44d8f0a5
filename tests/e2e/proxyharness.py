"""Real processes for the end-to-end tests: mitmdump with the addon, and a recording upstream.

The upstream is a raw socket server, not an HTTP library: it records the request line exactly as
the bytes arrived, which is the point of these tests.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import re
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 30.0
_LISTENING = re.compile(r"listening at (?:\*|[\d.]+|\[[^\]]*\]):(\d+)")


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
    """An HTTP/1.1 origin on 127.0.0.1 that records every request head it receives."""

    port: int
    tls: bool
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> list[Received]:
        with self.lock:
            got, self.received[:] = list(self.received), []
        return got

    @property
    def origin(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"


def _read_head(f: Any) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
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
                with upstream.lock:
                    upstream.received.append(Received(line, headers))
                length = 0
                for k, v in headers:
                    if k.lower() == b"content-length":
                        length = int(v)
                if length:
                    self.rfile.read(length)
                body = b"ok\n"
                self.wfile.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                self.wfile.flush()

    return Handler


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for localhost/127.0.0.1, made with `cryptography` (a mitmproxy dependency)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "upstream-cert.pem", tmp / "upstream-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@contextmanager
def upstream_server(tmp: Path | None = None) -> Iterator[Upstream]:
    """A recording upstream; with ``tmp``, it speaks TLS (HTTP/1.1 only) with a self-signed cert."""
    server = _Server(("127.0.0.1", 0), socketserver.StreamRequestHandler, bind_and_activate=True)
    upstream = Upstream(server.server_address[1], tls=tmp is not None)
    server.RequestHandlerClass = _handler(upstream)
    if tmp is not None:
        cert, key = self_signed(tmp)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["http/1.1"])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield upstream
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@dataclass
class Proxy:
    """A running mitmdump: its port, confdir (with mitmproxy's CA) and audit log."""

    process: subprocess.Popen[bytes]
    port: int
    confdir: Path
    log: Path
    output: list[str]

    @property
    def ca(self) -> Path:
        return self.confdir / "mitmproxy-ca-cert.pem"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def records(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text("ascii").splitlines()]


def urlsan_proxy_command(*args: str) -> list[str]:
    """``urlsan proxy ARGS``, through the same entry point the console script calls."""
    code = "import sys; from urlsan.cli.proxy import proxy_main; sys.exit(proxy_main(sys.argv[1:]))"
    return [sys.executable, "-c", code, *args]


def mitmdump_script_command(*args: str) -> list[str]:
    """``mitmdump -s addon/script.py ARGS``, the mitmproxy way from a checkout."""
    mitmdump = Path(sys.executable).with_name("mitmdump")
    return [str(mitmdump), "-s", str(REPO / "addon" / "script.py"), *args]


@contextmanager
def running_proxy(
    tmp: Path, *args: str, command: Any = urlsan_proxy_command, log: bool = True
) -> Iterator[Proxy]:
    """Start mitmdump on a free port (``-p 0``), wait until it listens, SIGINT it afterwards."""
    confdir = tmp / "confdir"
    audit = tmp / "audit.jsonl"
    extra = ["--set", f"urlsan_log={audit}"] if log else []
    argv = command(
        "--listen-host", "127.0.0.1", "-p", "0", "--set", f"confdir={confdir}", *extra, *args
    )
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp, env=_env()
    )
    output: list[str] = []
    port = _wait_for_port(process, output)
    reader = threading.Thread(target=_drain, args=(process, output), daemon=True)
    reader.start()
    proxy = Proxy(process, port, confdir, audit, output)
    try:
        yield proxy
    finally:
        stop(process)
        reader.join(5)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HTTP_PROXY", None)
    env.pop("http_proxy", None)
    env.pop("HTTPS_PROXY", None)
    env.pop("https_proxy", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _wait_for_port(process: subprocess.Popen[bytes], output: list[str]) -> int:
    assert process.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        raw = process.stdout.readline()
        if not raw:
            break
        line = raw.decode("utf-8", "replace").rstrip()
        output.append(line)
        m = _LISTENING.search(line)
        if m:
            return int(m.group(1))
    stop(process)
    raise RuntimeError("mitmdump did not start:\n" + "\n".join(output))


def _drain(process: subprocess.Popen[bytes], output: list[str]) -> None:
    assert process.stdout is not None
    for raw in process.stdout:
        output.append(raw.decode("utf-8", "replace").rstrip())


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT, as a user would; SIGKILL only if it does not exit in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def raw_request(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection and read the response head and body to EOF or length."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        return read_response(s)


def read_response(s: socket.socket) -> bytes:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    length = int(m.group(1)) if m else None
    if length is None:
        return buf
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def header(response: bytes, name: str) -> str | None:
    m = re.search(rb"(?im)^" + re.escape(name.encode()) + rb":\s*([^\r\n]*)", response)
    return m.group(1).decode("latin-1") if m else None
