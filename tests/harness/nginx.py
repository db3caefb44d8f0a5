"""A private nginx on 127.0.0.1 that logs, for every request, what it decoded.

It runs from a temporary prefix with its own configuration, pid file and temp directories, in
the foreground (``-g 'daemon off;'``); the system's nginx service is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import NamedTuple, Self

from .ports import LOOPBACK, free_port, wait_for_port
from .process import stop

NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")

NGINX_MISSING = (
    "nginx is not installed (run .ci/install-nginx, or apt-get install nginx-light): "
    "the real-server meaning checks against nginx are skipped"
)


def nginx_binary() -> str | None:
    """The nginx to run: $URLSAN_NGINX ("none": behave as if absent), PATH, the usual places."""
    forced = os.environ.get("URLSAN_NGINX")
    if forced:
        return None if forced == "none" else forced
    found = shutil.which("nginx")
    if found:
        return found
    return next((p for p in NGINX_CANDIDATES if os.access(p, os.X_OK)), None)


# $uri is nginx's decoded, dot-resolved path; $args the raw query.  escape=default writes '"', '\\'
# and bytes outside 0x20-0x7e as \xHH, so the log reads back to the exact bytes.
# What every private nginx of the harness starts with: one worker, every path in its own
# temporary prefix (never the system's), then its own http block's lines and server.
CONF_HEAD = """\
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log {error_level};
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
"""

_NGINX_CONF = (
    CONF_HEAD
    + """\
    log_format meaning '$http_x_case\\t$status\\t$request_uri\\t$uri\\t$args';
    large_client_header_buffers 4 256k;
    keepalive_requests 100000;
    server {{
        listen {host}:{port};
        server_name localhost;
        merge_slashes off;
        access_log {tmp}/access.log {log_format};
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""
)


class NginxRecord(NamedTuple):
    case: bytes  # the X-Case request header
    status: int
    request_uri: bytes
    uri: bytes
    args: bytes


_NGINX_ESCAPE = re.compile(rb"\\x([0-9A-Fa-f]{2})")


def _nginx_unescape(field: bytes) -> bytes:
    return _NGINX_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), field)


class Nginx:
    """``binary`` on 127.0.0.1:port until the block ends, logging what it decoded for every
    request (`records`); with ``log_format="combined"``, nginx's own combined access log
    (``log``, read while the block runs: the folder goes with it)."""

    def __init__(self, binary: str, log_format: str = "meaning") -> None:
        self.binary = binary
        self.log_format = log_format
        self.tmp = Path(tempfile.mkdtemp(prefix="urlsan-nginx-"))
        self.port = free_port()
        self.log = self.tmp / "access.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._read = 0

    def __enter__(self) -> Self:
        conf = self.tmp / "nginx.conf"
        conf.write_text(
            _NGINX_CONF.format(
                tmp=self.tmp,
                host=LOOPBACK,
                port=self.port,
                log_format=self.log_format,
                error_level="error",
            )
        )
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
