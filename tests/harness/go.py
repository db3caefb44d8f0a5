"""Go's net/http (Debian's golang-go) with tests/backends/apps/echo.go: a handler answering
with ``r.URL.Path``, alone (`GoServer`) or under ``http.ServeMux`` (``mux=True``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .echo import EchoServer, Reading
from .wire import header, raw_request

APP = Path(__file__).resolve().parent.parent / "backends" / "apps" / "echo.go"
GO_MISSING = "go is not installed (run .ci/install-backends, or apt-get install golang-go)"


def go_binary() -> str | None:
    found = shutil.which("go")
    if found:
        return found
    return "/usr/lib/go/bin/go" if os.access("/usr/lib/go/bin/go", os.X_OK) else None


def go_version() -> str:
    go = go_binary()
    return subprocess.run([go or "go", "version"], capture_output=True, text=True).stdout.strip()


class GoServer(EchoServer):
    """The echo app built with ``go build`` into a temporary directory and run there."""

    name = "go"

    def __init__(self, mux: bool = False) -> None:
        super().__init__()
        self.mux = mux

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        go = go_binary()
        if go is None:
            raise RuntimeError(GO_MISSING)
        exe = self.tmp / "echo"
        env = dict(os.environ, GO111MODULE="off", CGO_ENABLED="0")
        env.setdefault("GOCACHE", str(Path(tempfile.gettempdir()) / "urlsan-go-cache"))
        subprocess.run([go, "build", "-o", str(exe), str(APP)], check=True, env=env, cwd=self.tmp)
        argv = [str(exe), "-port", str(self.port)] + (["-mux"] if self.mux else [])
        return argv, None

    def read(self, target: bytes) -> Reading:
        """As `EchoServer.read`; under the mux a 301 is followed once, as a client would: the
        path the mux routes is the one it redirects to."""
        response = raw_request(self.port, target)
        if self.mux and response.status == 301:
            location = header(response.head + b"\r\n", "Location") or ""
            response = raw_request(self.port, location.encode("latin-1"))
        if response.status == 200:
            return Reading(200, response.body)
        return Reading(response.status, None)
