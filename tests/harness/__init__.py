"""The harness for tests that start real processes and servers, all on 127.0.0.1.

One module per idea:

    ports      LOOPBACK, free_port, wait_for_port
    process    Process (output read line by line, stopped by its own pid or group), stop,
               clean_env (no proxy variables)
    mitmdump   Mitmdump (any mitmdump, port from ``-p 0`` or given), running_proxy / Proxy
               (``urlsan proxy`` with a confdir and an audit log), ReverseProxy (``urlsan proxy
               --mode reverse:…``, quiet), the commands, addon_missing
    upstream   upstream_server / Upstream / Received: a raw origin that records request heads
               (TLS with a self-signed certificate: tls.self_signed); upstream_process
    serving    ServerThread: a server of this process in a thread while a block runs
    pages      PageSite: fixed pages served by http.server, recording every request-target
    nginx      Nginx (a private nginx logging what it decoded), nginx_binary, NGINX_MISSING
    wsgi       Werkzeug (werkzeug's server, answering with what it decoded), WSGI_REQUESTS
    wire       raw HTTP/1.1: exchange (bytes in and out), raw_request / Response / KeepAlive
    examples   running (a proxy script of examples/), example_env, EXAMPLES

and, for the servers whose reading of a request-target urlsan.core.backends models (each
answering with the path it routes on): echo (the shared echo protocol), nginx_echo, apache
(mod_lua), go (a handler and ServeMux), node (http + a router), wsgi_echo (werkzeug), servlet
(Tomcat and Jetty).

Tests import it as ``tests.harness`` (tests/ is a package; pytest puts the checkout's root on
sys.path for the packages below it); bench/ and tools/ scripts put the root there themselves.
"""

from .examples import EXAMPLES, example_env, require_proxy, running
from .mitmdump import (
    BIN,
    LISTENING,
    REPO,
    Mitmdump,
    Proxy,
    ReverseProxy,
    addon_missing,
    mitmdump_command,
    mitmdump_script_command,
    running_proxy,
    urlsan_command,
    urlsan_proxy_command,
)
from .nginx import NGINX_MISSING, Nginx, NginxRecord, nginx_binary
from .pages import PageSite
from .ports import LOOPBACK, free_port, wait_for_port
from .process import Process, clean_env, stop
from .serving import ServerThread
from .tls import self_signed
from .upstream import Received, Upstream, upstream_process, upstream_server
from .wire import (
    KeepAlive,
    Response,
    dechunk,
    exchange,
    header,
    parse_response,
    raw_request,
    read_response,
    status,
)
from .wsgi import WSGI_REQUESTS, Werkzeug

__all__ = [
    "BIN",
    "EXAMPLES",
    "LISTENING",
    "LOOPBACK",
    "NGINX_MISSING",
    "REPO",
    "WSGI_REQUESTS",
    "KeepAlive",
    "Mitmdump",
    "Nginx",
    "NginxRecord",
    "PageSite",
    "Process",
    "Proxy",
    "Received",
    "Response",
    "ReverseProxy",
    "ServerThread",
    "Upstream",
    "Werkzeug",
    "addon_missing",
    "clean_env",
    "dechunk",
    "example_env",
    "exchange",
    "free_port",
    "header",
    "mitmdump_command",
    "mitmdump_script_command",
    "nginx_binary",
    "parse_response",
    "raw_request",
    "read_response",
    "require_proxy",
    "running",
    "running_proxy",
    "self_signed",
    "status",
    "stop",
    "upstream_process",
    "upstream_server",
    "urlsan_command",
    "urlsan_proxy_command",
    "wait_for_port",
]
