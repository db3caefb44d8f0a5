"""werkzeug's development server in a thread with an app answering ``request.path``: the path
a werkzeug (Flask) application routes on, text decoded from UTF-8 (U+FFFD for what is not)."""

from __future__ import annotations

from typing import Any, Self

from .echo import Reading
from .ports import LOOPBACK
from .serving import ServerThread
from .wire import raw_request


def _app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    from werkzeug.wrappers import Request

    body = Request(environ).path.encode("utf-8", "surrogatepass")
    start_response(
        "200 OK",
        [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))],
    )
    return [body]


class WerkzeugEcho:
    name = "werkzeug"

    def __enter__(self) -> Self:
        import logging

        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
        self.thread = ServerThread(make_server(LOOPBACK, 0, _app, threaded=True), 0.1)
        self.port = int(self.thread.server.server_port)
        self.thread.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.__exit__(*exc)

    def read(self, target: bytes) -> Reading:
        response = raw_request(self.port, target)
        if response.status == 200:
            return Reading(200, response.body)
        return Reading(response.status, None)
