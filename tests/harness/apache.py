"""A private Apache httpd (Debian's apache2) answering every request with ``r.uri``, the
decoded, normalized path its handlers and ``<Location>`` sections see (a Lua handler:
mod_lua's ``LuaMapHandler``).  The configuration is httpd's defaults but for the port, the
directories and the handler; `ApacheEcho` takes ``AllowEncodedSlashes`` and ``MergeSlashes``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from .echo import EchoServer

APACHE_BINARY = "/usr/sbin/apache2"
MODULES = "/usr/lib/apache2/modules"
APACHE_MISSING = "apache2 is not installed (run .ci/install-backends, or apt-get install apache2)"

_CONF = """\
ServerRoot "{tmp}"
ServerName localhost
Listen 127.0.0.1:{port}
PidFile "{tmp}/httpd.pid"
ErrorLog "{tmp}/error.log"
LogLevel crit
DefaultRuntimeDir "{tmp}"
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule lua_module {modules}/mod_lua.so
User {user}
Group {group}
DocumentRoot "{tmp}/htdocs"
AllowEncodedSlashes {encoded_slashes}
MergeSlashes {merge_slashes}
LuaMapHandler "^/" "{tmp}/echo.lua" handle
"""

_LUA = """\
function handle(r)
    r.content_type = "application/octet-stream"
    r:write(r.uri)
    return apache2.OK
end
"""


def apache_version() -> str:
    out = subprocess.run([APACHE_BINARY, "-v"], capture_output=True, text=True).stdout
    return out.splitlines()[0].split(":", 1)[1].strip() if out else ""


class ApacheEcho(EchoServer):
    name = "apache"
    ready = None

    def __init__(self, encoded_slashes: str = "Off", merge_slashes: bool = True) -> None:
        super().__init__()
        self.encoded_slashes = encoded_slashes
        self.merge_slashes = merge_slashes

    def command(self) -> tuple[Sequence[str], dict[str, str] | None]:
        if not os.access(APACHE_BINARY, os.X_OK):
            raise RuntimeError(APACHE_MISSING)
        (self.tmp / "htdocs").mkdir()
        (self.tmp / "echo.lua").write_text(_LUA)
        root = os.getuid() == 0
        conf = self.tmp / "httpd.conf"
        conf.write_text(
            _CONF.format(
                tmp=self.tmp,
                port=self.port,
                modules=MODULES,
                user="www-data" if root else f"#{os.getuid()}",
                group="www-data" if root else f"#{os.getgid()}",
                encoded_slashes=self.encoded_slashes,
                merge_slashes="On" if self.merge_slashes else "Off",
            )
        )
        os.chmod(self.tmp, 0o755)
        os.chmod(self.tmp / "echo.lua", 0o644)
        return [APACHE_BINARY, "-d", str(self.tmp), "-f", str(conf), "-DFOREGROUND"], None
