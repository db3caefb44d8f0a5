"""A private nginx answering every request with ``$uri``: the decoded, normalized path its
locations match (`NginxEcho`); the default configuration but for the port and the prefix."""

from __future__ import annotations

from collections.abc import Sequence

from .echo import EchoServer
from .nginx import CONF_HEAD, NGINX_MISSING, nginx_binary

_CONF = (
    CONF_HEAD
    + """\
    access_log off;
    large_client_header_buffers 4 64k;
    server {{
        listen 127.0.0.1:{port};
        merge_slashes {merge_slashes};
        location / {{ default_type application/octet-stream; return 200 "$uri"; }}
    }}
}}
"""
)


class NginxEcho(EchoServer):
    name = "nginx"
    ready = None

    def __init__(self, merge_slashes: bool = True) -> None:
        super().__init__()
        self.merge_slashes = merge_slashes

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        binary = nginx_binary()
        if binary is None:
            raise RuntimeError(NGINX_MISSING)
        conf = self.tmp / "nginx.conf"
        conf.write_text(
            _CONF.format(
                tmp=self.tmp,
                port=self.port,
                merge_slashes="on" if self.merge_slashes else "off",
                error_level="crit",
            )
        )
        (self.tmp / "logs").mkdir()
        argv = [binary, "-p", str(self.tmp), "-c", str(conf), "-e", str(self.tmp / "error.log")]
        return [*argv, "-g", "daemon off;"], None
