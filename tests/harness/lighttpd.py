"""A private lighttpd (Debian's lighttpd) answering every request with the path its
``$HTTP["url"]`` conditions match: a ``url.redirect`` inside such a condition to
``${url.path}`` (that path, percent-encoded), read back from the ``Location`` header
(`LighttpdEcho`).  The default ``server.http-parseopts``; nothing but mod_redirect loaded.

The condition is a prefix match (``=^``): a regular-expression condition (``=~``) matches
nothing at all in a path that is no UTF-8 (PCRE2 in UTF mode), and the echo would not run."""

from __future__ import annotations

import re
import shutil
import subprocess
import urllib.parse
from collections.abc import Sequence

from .echo import EchoServer, Reading
from .wire import Response, header

LIGHTTPD_MISSING = (
    "lighttpd is not installed (run .ci/install-backends, or apt-get install lighttpd)"
)

_ECHO = "http://echo.invalid/"
_CONF = """\
server.document-root = "{tmp}/www"
server.bind = "127.0.0.1"
server.port = {port}
server.modules = ("mod_redirect")
server.errorlog = "{tmp}/error.log"
$HTTP["url"] =^ "/" {{
    url.redirect = ("" => "{echo}${{url.path}}")
}}
"""


def lighttpd_binary() -> str | None:
    return shutil.which("lighttpd") or shutil.which("/usr/sbin/lighttpd")


def lighttpd_version() -> str:
    out = subprocess.run([lighttpd_binary() or "lighttpd", "-v"], capture_output=True, text=True)
    m = re.search(r"lighttpd/(\S+)", out.stdout)
    return m.group(1) if m else out.stdout


class LighttpdEcho(EchoServer):
    name = "lighttpd"
    ready = None

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        binary = lighttpd_binary()
        if binary is None:
            raise RuntimeError(LIGHTTPD_MISSING)
        (self.tmp / "www").mkdir()
        conf = self.tmp / "lighttpd.conf"
        conf.write_text(_CONF.format(tmp=self.tmp, port=self.port, echo=_ECHO))
        return [binary, "-D", "-f", str(conf)], None

    def reading(self, response: Response) -> Reading:
        """The redirect's path, decoded, as a 200 (the echo); any other status as is."""
        location = header(response.head + b"\r\n", "Location") if response.status == 301 else None
        if location is None or not location.startswith(_ECHO):
            return Reading(response.status or 400, None)
        path = location[len(_ECHO) :].encode("latin-1")
        return Reading(200, urllib.parse.unquote_to_bytes(path))
