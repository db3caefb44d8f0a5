"""Node's http module with tests/backends/apps/echo.js: the path an Express-style router reads
(the pathname, decoded by ``decodeURIComponent``; 400 when it does not decode)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .echo import EchoServer

APP = Path(__file__).resolve().parent.parent / "backends" / "apps" / "echo.js"
NODE_MISSING = "node is not installed (Debian: apt-get install nodejs)"


def node_binary() -> str | None:
    return shutil.which("node") or shutil.which("nodejs")


def node_version() -> str:
    return subprocess.run(
        [node_binary() or "node", "--version"], capture_output=True, text=True
    ).stdout.strip()


class NodeServer(EchoServer):
    name = "node"

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        node = node_binary()
        if node is None:
            raise RuntimeError(NODE_MISSING)
        return [node, str(APP), str(self.port)], None
