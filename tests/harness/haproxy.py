"""A private HAProxy (Debian's haproxy) answering every request with its ``path`` sample: the
path an ACL's ``path`` fetch matches, before or after the documented ``http-request
normalize-uri`` actions (`HAProxyEcho`, ``normalize=True``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence

from .echo import EchoServer

HAPROXY_MISSING = "haproxy is not installed (run .ci/install-backends, or apt-get install haproxy)"

# Every path normalizer of the configuration manual (section 4.4, "http-request
# normalize-uri"), in the order urlsan's "haproxy" model takes them; path-strip-dotdot
# without "full" (a ".." above the root stays).
NORMALIZERS = (
    "path-merge-slashes",
    "percent-decode-unreserved",
    "percent-to-uppercase",
    "path-strip-dot",
    "path-strip-dotdot",
)

_CONF = """\
global
    maxconn 256
{experimental}defaults
    mode http
    timeout connect 5s
    timeout client 10s
    timeout server 10s
frontend echo
    bind 127.0.0.1:{port}
{rules}    http-request return status 200 content-type application/octet-stream lf-string "%[path]"
"""


def haproxy_binary() -> str | None:
    found = shutil.which("haproxy")
    if found:
        return found
    return "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None


def haproxy_version() -> str:
    out = subprocess.run([haproxy_binary() or "haproxy", "-v"], capture_output=True, text=True)
    m = re.search(r"version (\S+)", out.stdout)
    return m.group(1) if m else out.stdout


class HAProxyEcho(EchoServer):
    name = "haproxy"
    ready = None

    def __init__(self, normalize: bool = False) -> None:
        super().__init__()
        self.normalize = normalize

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        binary = haproxy_binary()
        if binary is None:
            raise RuntimeError(HAPROXY_MISSING)
        rules = "".join(
            f"    http-request normalize-uri {n}\n" for n in (NORMALIZERS if self.normalize else ())
        )
        conf = self.tmp / "haproxy.cfg"
        # normalize-uri is experimental in 2.6: the global directive lets it be configured
        experimental = "    expose-experimental-directives\n" if self.normalize else ""
        conf.write_text(_CONF.format(port=self.port, rules=rules, experimental=experimental))
        return [binary, "-db", "-f", str(conf)], None
