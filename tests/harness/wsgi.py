"""werkzeug's WSGI server in a thread, with an app that answers with what it decoded."""

from __future__ import annotations

import json
import threading
from typing import Any

from .ports import LOOPBACK
from .serving import ServerThread

WSGI_REQUESTS = [0]  # requests answered by every `Werkzeug` so far
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


class Werkzeug(ServerThread):
    """``werkzeug.serving.make_server`` on 127.0.0.1 and a free port, in a thread of this
    process, until the block ends; every answer is JSON: ``path_info``, ``query_string`` and
    the ``args`` werkzeug parsed."""

    def __init__(self) -> None:
        import logging

        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # 400s are expected here
        super().__init__(make_server(LOOPBACK, 0, _wsgi_app, threaded=True), poll_interval=0.1)
        self.port = int(self.server.server_port)
