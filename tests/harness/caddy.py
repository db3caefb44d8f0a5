"""A private Caddy (Debian's caddy) answering every request with the path it sees: what a
handler sees (``{http.request.uri.path}``: Go's ``r.URL.Path``), or what a ``path_regexp``
matcher tests (its capture of the whole path: the path the ``path`` matchers clean), with
``CaddyEcho(matcher=True)``.  No admin endpoint, no automatic HTTPS, nothing kept."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence

from .echo import EchoServer
from .process import clean_env

CADDY_MISSING = "caddy is not installed (run .ci/install-backends, or apt-get install caddy)"

_CONF = """\
{{
    admin off
    auto_https off
}}
http://:{port} {{
    bind 127.0.0.1
{body}
}}
"""
_HANDLER = '    respond "{http.request.uri.path}" 200'
# path_regexp holds the path its matcher tests; "(?s)": a decoded line break is matched too
_MATCHER = """\
    @all path_regexp p (?s)^(.*)$
    respond @all "{re.p.1}" 200
    respond "no match" 404"""


def caddy_binary() -> str | None:
    return shutil.which("caddy")


def caddy_version() -> str:
    out = subprocess.run([caddy_binary() or "caddy", "version"], capture_output=True, text=True)
    m = re.search(r"v?(\d+\.\d+\.\d+)", out.stdout)
    return m.group(1) if m else out.stdout


class CaddyEcho(EchoServer):
    name = "caddy"
    ready = None

    def __init__(self, matcher: bool = False) -> None:
        super().__init__()
        self.matcher = matcher

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        binary = caddy_binary()
        if binary is None:
            raise RuntimeError(CADDY_MISSING)
        conf = self.tmp / "Caddyfile"
        body = _MATCHER if self.matcher else _HANDLER
        conf.write_text(_CONF.format(port=self.port, body=body))
        env = clean_env(
            HOME=str(self.tmp), XDG_DATA_HOME=str(self.tmp), XDG_CONFIG_HOME=str(self.tmp)
        )
        return [binary, "run", "--config", str(conf), "--adapter", "caddyfile"], env
