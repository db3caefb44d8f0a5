"""Each modeled server by its name in urlsan.core.backends: how to start it, whether it is
here, and how the text a model gives comes back from its application as bytes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any

from tests.harness.apache import APACHE_BINARY, APACHE_MISSING, ApacheEcho
from tests.harness.caddy import CADDY_MISSING, CaddyEcho, caddy_binary
from tests.harness.go import GO_MISSING, GoServer, go_binary
from tests.harness.haproxy import HAPROXY_MISSING, HAProxyEcho, haproxy_binary
from tests.harness.lighttpd import LIGHTTPD_MISSING, LighttpdEcho, lighttpd_binary
from tests.harness.nginx import NGINX_MISSING, nginx_binary
from tests.harness.nginx_echo import NginxEcho
from tests.harness.node import NODE_MISSING, NodeServer, node_binary
from tests.harness.servlet import (
    JETTY_HOME,
    JETTY_MISSING,
    TOMCAT_HOME,
    TOMCAT_MISSING,
    JettyEcho,
    TomcatEcho,
)
from tests.harness.wsgi_echo import WerkzeugEcho

# URLSAN_REQUIRE_BACKENDS=1 (CI): a server that is not here fails the test instead of skipping
REQUIRED = os.environ.get("URLSAN_REQUIRE_BACKENDS") == "1"


def _java() -> bool:
    return shutil.which("java") is not None and shutil.which("javac") is not None


def _werkzeug() -> bool:
    try:
        import werkzeug  # noqa: F401
    except ImportError:
        return False
    return True


# name: (start, missing-reason or "" when present)
SERVERS: dict[str, tuple[Callable[..., Any], Callable[[], str]]] = {
    "nginx": (NginxEcho, lambda: "" if nginx_binary() else NGINX_MISSING),
    "apache": (ApacheEcho, lambda: "" if os.access(APACHE_BINARY, os.X_OK) else APACHE_MISSING),
    "tomcat": (
        TomcatEcho,
        lambda: "" if (TOMCAT_HOME / "lib").is_dir() and _java() else TOMCAT_MISSING,
    ),
    "jetty": (
        JettyEcho,
        lambda: "" if (JETTY_HOME / "start.jar").exists() and _java() else JETTY_MISSING,
    ),
    "go": (GoServer, lambda: "" if go_binary() else GO_MISSING),
    "go-mux": (lambda **kw: GoServer(mux=True, **kw), lambda: "" if go_binary() else GO_MISSING),
    "node": (NodeServer, lambda: "" if node_binary() else NODE_MISSING),
    "werkzeug": (WerkzeugEcho, lambda: "" if _werkzeug() else "werkzeug is not installed"),
    "caddy": (CaddyEcho, lambda: "" if caddy_binary() else CADDY_MISSING),
    "caddy-path": (
        lambda **kw: CaddyEcho(matcher=True, **kw),
        lambda: "" if caddy_binary() else CADDY_MISSING,
    ),
    "lighttpd": (LighttpdEcho, lambda: "" if lighttpd_binary() else LIGHTTPD_MISSING),
    "haproxy-path": (HAProxyEcho, lambda: "" if haproxy_binary() else HAPROXY_MISSING),
    "haproxy": (
        lambda **kw: HAProxyEcho(normalize=True, **kw),
        lambda: "" if haproxy_binary() else HAPROXY_MISSING,
    ),
}


def expected_body(name: str, path: str) -> bytes:
    """The bytes server ``name``'s echo application answers for a model's ``path``."""
    if name in ("tomcat", "jetty"):
        return path.encode("utf-8", "replace")  # Java's encoder: "?" for a lone surrogate
    if name.startswith("haproxy"):  # the log-format string escapes DEL in what it writes
        return path.encode("utf-8", "surrogateescape").replace(b"\x7f", b"%7F")
    return path.encode("utf-8", "surrogateescape")


def installed_version(name: str) -> str:
    """The version of server ``name`` installed here, as its own tools print it."""
    import re
    import subprocess
    from importlib.metadata import version

    from tests.harness.apache import apache_version
    from tests.harness.caddy import caddy_version
    from tests.harness.go import go_version
    from tests.harness.haproxy import haproxy_version
    from tests.harness.lighttpd import lighttpd_version
    from tests.harness.node import node_version
    from tests.harness.servlet import jetty_version, tomcat_version

    if name == "nginx":
        out = subprocess.run([nginx_binary() or "nginx", "-v"], capture_output=True, text=True)
        text = out.stderr
    elif name == "apache":
        text = apache_version()
    elif name == "tomcat":
        text = tomcat_version()
    elif name == "jetty":
        text = jetty_version()
    elif name in ("go", "go-mux"):
        text = go_version()
    elif name == "node":
        text = node_version()
    elif name in ("caddy", "caddy-path"):
        text = caddy_version()
    elif name == "lighttpd":
        text = lighttpd_version()
    elif name in ("haproxy", "haproxy-path"):
        text = haproxy_version()
    else:
        text = version("werkzeug")
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else text
