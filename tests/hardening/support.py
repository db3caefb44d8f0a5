"""Real processes for the hardening tests: a private nginx, a werkzeug WSGI server, a raw client.

Everything listens on 127.0.0.1 only, on a port the kernel picked; everything started here is
stopped by the context manager that started it.  nginx runs from a temporary prefix with its
own configuration, pid file and temp directories, in the foreground (``-g 'daemon off;'``); the
system's nginx service is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote_to_bytes

LOOPBACK = "127.0.0.1"

# Figures printed at the end of the run by conftest.py's terminal summary.
FIGURES: Counter[str] = Counter()
NOTES: list[str] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def wait_for_port(
    port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 15.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {LOOPBACK}:{port} after {timeout}s")


def stop(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """Stop one process we started: SIGTERM, then SIGKILL if it does not go."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


# --- a raw HTTP/1.1 client: the request line is exactly the bytes given.


class Response(NamedTuple):
    status: int  # 0: the connection closed without a status line
    body: bytes
    head: bytes = b""

    @property
    def server(self) -> bytes | None:
        """The Server header: "nginx/…", "Werkzeug/…", or "mitmproxy …" for the proxy's own."""
        m = re.search(rb"\r\nserver:[ \t]*([^\r\n]*)", self.head, re.IGNORECASE)
        return m.group(1) if m else None


def raw_request(
    port: int,
    target: bytes,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    method: bytes = b"GET",
) -> Response:
    head = [method + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    head += [f"{k}: {v}".encode() for k, v in (headers or {}).items()]
    data = b"\r\n".join(head) + b"\r\n\r\n"
    with socket.create_connection((LOOPBACK, port), timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return parse_response(b"".join(chunks))


def parse_response(raw: bytes) -> Response:
    m = re.match(rb"HTTP/1\.[01] (\d{3})", raw)
    if not m:
        return Response(0, raw)
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        body = dechunk(body)
    return Response(int(m.group(1)), body, head)


def dechunk(body: bytes) -> bytes:
    out, pos = [], 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return b"".join(out)
        size = int(body[pos:eol].split(b";")[0] or b"0", 16)
        if size == 0:
            return b"".join(out)
        out.append(body[eol + 2 : eol + 2 + size])
        pos = eol + 2 + size + 2


class KeepAlive:
    """One HTTP/1.1 connection reused for many requests (reconnects when the peer closes)."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.buf = b""
        self.connections = 0

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buf = b""

    def request(self, target: bytes, headers: dict[str, str] | None = None) -> Response:
        extra = b"".join(f"{k}: {v}\r\n".encode() for k, v in (headers or {}).items())
        for attempt in (1, 2):
            if self.sock is None:
                self.sock = socket.create_connection((LOOPBACK, self.port), self.timeout)
                self.connections += 1
            try:
                self.sock.sendall(
                    b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + b"\r\n"
                )
                return self._read()
            except (ConnectionError, EOFError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _fill(self) -> None:
        assert self.sock is not None
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def _read(self) -> Response:
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        m = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.IGNORECASE)
        length = int(m.group(1)) if m else 0
        while len(rest) < length:
            self._fill()
            rest = self.buf.partition(b"\r\n\r\n")[2]
        body, self.buf = rest[:length], rest[length:]
        status = int(head.split(b" ", 2)[1])
        if re.search(rb"\r\nconnection:\s*close", head, re.IGNORECASE):
            self.close()
        return Response(status, body, head)


# --- nginx


NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


def nginx_binary() -> str | None:
    """The nginx to run: $URLSAN_NGINX ("none": behave as if absent), PATH, the usual places."""
    forced = os.environ.get("URLSAN_NGINX")
    if forced:
        return None if forced == "none" else forced
    found = shutil.which("nginx")
    if found:
        return found
    return next((p for p in NGINX_CANDIDATES if os.access(p, os.X_OK)), None)


NGINX_MISSING = (
    "nginx is not installed (run .ci/install-nginx, or apt-get install nginx-light): "
    "the real-server meaning checks against nginx are skipped"
)

# $uri is nginx's decoded, dot-resolved path; $args the raw query.  escape=default writes '"', '\\'
# and bytes outside 0x20-0x7e as \xHH, so the log reads back to the exact bytes.
_NGINX_CONF = """\
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log error;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    log_format meaning '$http_x_case\\t$status\\t$request_uri\\t$uri\\t$args';
    large_client_header_buffers 4 256k;
    keepalive_requests 100000;
    server {{
        listen {host}:{port};
        server_name localhost;
        merge_slashes off;
        access_log {tmp}/access.log meaning;
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""


class NginxRecord(NamedTuple):
    case: bytes
    status: int
    request_uri: bytes
    uri: bytes
    args: bytes


_NGINX_ESCAPE = re.compile(rb"\\x([0-9A-Fa-f]{2})")


def _nginx_unescape(field: bytes) -> bytes:
    return _NGINX_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), field)


class Nginx:
    """A private nginx on 127.0.0.1:port, logging what it decoded for every request."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.tmp = Path(tempfile.mkdtemp(prefix="urlsan-nginx-"))
        self.port = free_port()
        self.log = self.tmp / "access.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._read = 0

    def __enter__(self) -> Nginx:
        conf = self.tmp / "nginx.conf"
        conf.write_text(_NGINX_CONF.format(tmp=self.tmp, host=LOOPBACK, port=self.port))
        (self.tmp / "logs").mkdir()  # the compiled-in error log of the prefix, before conf loads
        self.proc = subprocess.Popen(
            [
                self.binary,
                "-p",
                str(self.tmp),
                "-c",
                str(conf),
                "-e",
                str(self.tmp / "error.log"),
                "-g",
                "daemon off;",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_for_port(self.port, self.proc)
        except RuntimeError as e:
            stop(self.proc)
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise RuntimeError(f"nginx did not start: {e}\n{err}") from e
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop(self.proc)
            if self.proc.stderr:
                self.proc.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def records(self) -> list[NginxRecord]:
        """Log records written since the last call."""
        deadline = time.monotonic() + 2
        data = self.log.read_bytes()[self._read :] if self.log.exists() else b""
        while data and not data.endswith(b"\n") and time.monotonic() < deadline:
            time.sleep(0.01)
            data = self.log.read_bytes()[self._read :]
        self._read += len(data)
        out = []
        for line in data.splitlines():
            case, status, request_uri, uri, args = line.split(b"\t")
            out.append(
                NginxRecord(
                    case,
                    int(status),
                    _nginx_unescape(request_uri),
                    _nginx_unescape(uri),
                    _nginx_unescape(args),
                )
            )
        return out


# --- werkzeug


WSGI_REQUESTS = [0]
_WSGI_LOCK = threading.Lock()


def _wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    from werkzeug.wrappers import Request

    with _WSGI_LOCK:
        WSGI_REQUESTS[0] += 1
    request = Request(environ)
    record = {
        "path_info": environ["PATH_INFO"],  # WSGI strings: latin-1 code points are bytes
        "query_string": environ["QUERY_STRING"],
        "args": [[k, v] for k, v in request.args.items(multi=True)],
    }
    body = json.dumps(record).encode()
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


class Werkzeug:
    """werkzeug's WSGI server (``werkzeug.serving.make_server``) in a thread of this process."""

    def __init__(self) -> None:
        import logging

        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # 400s are expected here
        self.server = make_server(LOOPBACK, 0, _wsgi_app, threaded=True)
        self.port = int(self.server.server_port)
        self.thread = threading.Thread(
            target=self.server.serve_forever, daemon=True, kwargs={"poll_interval": 0.1}
        )

    def __enter__(self) -> Werkzeug:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


# --- what a server decoded, made comparable


def query_pairs(raw: bytes) -> tuple[tuple[bytes, bytes], ...]:
    """A query as an application reads it: split on '&' and the first '=', then decode escapes."""
    if not raw:
        return ()
    out = []
    for part in raw.split(b"&"):
        name, eq, value = part.partition(b"=")
        out.append((unquote_to_bytes(name), unquote_to_bytes(value) if eq else b""))
    return tuple(out)


def resolve_dots(path: bytes) -> bytes:
    """RFC 3986 §5.2.4 on a decoded path (what a router or a file server does with '..')."""
    if not path.startswith(b"/"):
        return path
    out: list[bytes] = []
    segments = path.split(b"/")[1:]
    for i, seg in enumerate(segments):
        if seg == b"..":
            if out:
                out.pop()
        elif seg != b".":
            out.append(seg)
            continue
        if i == len(segments) - 1:
            out.append(b"")
    return b"/" + b"/".join(out)


@contextlib.contextmanager
def nginx_or_none() -> Iterator[Nginx | None]:
    binary = nginx_binary()
    if binary is None:
        yield None
        return
    with Nginx(binary) as n:
        yield n


# --- the real proxy: ``urlsan proxy`` (mitmdump with the addon), reverse mode to an upstream


def addon_missing() -> str | None:
    """Why the through-proxy tests cannot run here, or None."""
    try:
        import mitmproxy  # noqa: F401
    except ImportError:
        return "mitmproxy is not installed (pip install -e '.[proxy]'): through-proxy tests skipped"
    try:
        from urlsan.addon import sanitizer  # noqa: F401
        from urlsan.cli import proxy  # noqa: F401
    except ImportError as e:
        return f"urlsan.addon is not importable ({e}): through-proxy tests skipped"
    return None


def urlsan_command() -> list[str]:
    import sys

    script = Path(sys.executable).with_name("urlsan")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from urlsan.cli.main import main; sys.exit(main())"]


class Proxy:
    """``urlsan proxy --mode reverse:UPSTREAM`` on 127.0.0.1:port with an audit log.

    ``fsize``: an RLIMIT_FSIZE for the proxy process (bytes): writes past it fail with EFBIG, as
    they would on a full disk, without mounting anything.
    """

    def __init__(
        self, upstream_port: int, log: Path | str | None, *extra: str, fsize: int | None = None
    ) -> None:
        self.port = free_port()
        self.log = Path(log) if log else None
        self.args = [
            *urlsan_command(),
            "proxy",
            "--mode",
            f"reverse:http://{LOOPBACK}:{upstream_port}",
            "--listen-host",
            LOOPBACK,
            "-p",
            str(self.port),
            "--set",
            "flow_detail=0",
            "--set",
            "termlog_verbosity=warn",
            "--set",
            f"urlsan_log={self.log or ''}",
            *extra,
        ]
        self.fsize = fsize
        self.lines: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.reader: threading.Thread | None = None

    def _limits(self) -> None:
        import resource

        if self.fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.fsize, self.fsize))

    def _read_output(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.decode(errors="replace"))

    def __enter__(self) -> Proxy:
        # Output through a pipe, read here: a pipe is not subject to the proxy's RLIMIT_FSIZE.
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=self._limits if self.fsize is not None else None,
        )
        self.reader = threading.Thread(target=self._read_output, daemon=True)
        self.reader.start()
        try:
            wait_for_port(self.port, self.proc, timeout=60)
        except RuntimeError as e:
            stop(self.proc)
            raise RuntimeError(f"urlsan proxy did not start: {e}\n{self.output()}") from e
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop(self.proc, 20)
        if self.reader is not None:
            self.reader.join(10)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def output(self, settle: float = 0.3) -> str:
        """Everything the proxy printed so far (after ``settle`` seconds for the pipe)."""
        time.sleep(settle)
        return "".join(self.lines)

    def rss_kib(self) -> int:
        """Resident memory of the proxy process (KiB), from /proc."""
        assert self.proc is not None
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        m = re.search(r"VmRSS:\s+(\d+) kB", status)
        return int(m.group(1)) if m else 0

    def records(self) -> list[dict[str, Any]]:
        """The audit log, every line parsed (a line that is not one JSON object fails)."""
        if self.log is None or not self.log.exists():
            return []
        out = []
        for n, line in enumerate(self.log.read_bytes().splitlines(), 1):
            record = json.loads(line)
            assert isinstance(record, dict), f"audit log line {n} is not a JSON object"
            out.append(record)
        return out
