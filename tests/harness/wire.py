"""Raw HTTP/1.1 over sockets to 127.0.0.1: the request line is exactly the bytes given, which no
HTTP library promises."""

from __future__ import annotations

import re
import socket
from typing import NamedTuple

from .ports import LOOPBACK

# --- bytes in, bytes out


def exchange(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection; the response head and body (to its Content-Length,
    or what came with the head)."""
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as s:
        s.sendall(data)
        return read_response(s)


def read_response(s: socket.socket) -> bytes:
    """One response from ``s``: its head, and its body to the Content-Length."""
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


# --- a request for a target, parsed


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
    """``METHOD target HTTP/1.1`` with ``Connection: close`` on a fresh connection, read to
    EOF."""
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
    out: list[bytes] = []
    pos = 0
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
