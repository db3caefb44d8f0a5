"""A server of this process (``socketserver``, ``http.server``, werkzeug's) in a thread of its
own while a block runs."""

from __future__ import annotations

import threading
from typing import Any, Self


class ServerThread:
    """``server`` (anything with ``serve_forever``, ``shutdown`` and ``server_close``) serving
    in a daemon thread from ``__enter__`` until ``__exit__``."""

    def __init__(self, server: Any, poll_interval: float = 0.5) -> None:
        self.server = server
        self.thread = threading.Thread(
            target=server.serve_forever, daemon=True, kwargs={"poll_interval": poll_interval}
        )

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
