"""A small site of fixed pages in a thread (``http.server``), recording the request-target of
every GET exactly as it arrived."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .ports import LOOPBACK
from .serving import ServerThread


class PageSite(ServerThread):
    """``pages`` (path: HTML) on 127.0.0.1 and a free port until the block ends; ``page_of``
    maps a request-target to the path it asks for; a path not in ``pages`` is a 404.
    ``received``: every request-target, in order."""

    def __init__(self, pages: Mapping[str, str], page_of: Callable[[str], str]) -> None:
        self.received: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.received.append(self.path)  # the raw request-target
                page = pages.get(page_of(self.path))
                body = (page or "<p>not found</p>").encode()
                self.send_response(200 if page is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(ThreadingHTTPServer((LOOPBACK, 0), Handler))
        self.port = self.server.server_address[1]
        self.url = f"http://{LOOPBACK}:{self.port}"
