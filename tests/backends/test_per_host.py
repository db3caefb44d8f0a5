"""Per-host entries of ``urlsan_backends`` end to end: one ``urlsan proxy`` in forward-proxy
mode in front of two real servers, each protected as what it is
(``tomcat@127.0.0.1:PORT,nginx@127.0.0.1:PORT``).  A request is refused for the server it goes
to, and only for what that server reads otherwise."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.harness import LOOPBACK, running_proxy
from tests.harness.wire import Response, exchange, parse_response

from .test_agreement import start

pytestmark = pytest.mark.e2e

# Tomcat strips ";" before it resolves "..", nginx decodes %2F before it does: each reads one
# of these as /b where RFC 3986 reads a path under /a/, and the other as RFC 3986 does (nginx)
# or refuses it itself (Tomcat answers %2F with 400).
PARAM = b"/a/..;/b"
SLASH = b"/a/..%2F/b"


def forward(proxy_port: int, host: str, target: bytes) -> Response:
    """``GET http://HOST/target`` through the proxy, as a client configured with it sends it."""
    head = b"GET http://%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
    return parse_response(exchange(proxy_port, head % (host.encode(), target, host.encode())))


def test_each_host_is_protected_as_the_server_it_is(tmp_path: Path) -> None:
    with start("tomcat") as tomcat, start("nginx") as nginx:  # type: ignore[attr-defined]
        hosts = {"tomcat": f"{LOOPBACK}:{tomcat.port}", "nginx": f"{LOOPBACK}:{nginx.port}"}
        value = ",".join(f"{name}@{host}" for name, host in hosts.items())
        settings = ("--set", f"urlsan_backends={value}", "--set", "urlsan_mode=rewrite")
        with running_proxy(tmp_path, *settings) as proxy:
            answers = {
                (name, target): forward(proxy.port, host, target)
                for name, host in hosts.items()
                for target in (PARAM, SLASH)
            }
            time.sleep(0.5)  # the records of the last responses
            records = proxy.records()
            startup = "\n".join(proxy.output)
    assert f"protecting {hosts['tomcat']} as tomcat, {hosts['nginx']} as nginx" in startup
    refused = {
        (r["backends"][0]["server"], r["before"]): r
        for r in records
        if r.get("rejected_by") == "urlsan_backends"
    }
    # Each server's own misreading is refused by urlsan, naming that server alone.
    assert set(refused) == {("tomcat", PARAM.decode()), ("nginx", SLASH.decode())}
    assert all(len(r["backends"]) == 1 for r in refused.values())
    assert answers["tomcat", PARAM].status == 400 and answers["nginx", SLASH].status == 400
    # The other server's reading of the same target is forwarded: nginx routes /a/..;/b as it
    # is, Tomcat refuses %2F itself.
    assert answers["nginx", PARAM].status == 200
    assert answers["nginx", PARAM].body == PARAM
    assert answers["tomcat", SLASH].status == 400
    assert answers["tomcat", PARAM].body.startswith(b"urlsan: tomcat routes it as '/b'")
    assert not answers["tomcat", SLASH].body.startswith(b"urlsan:")  # Tomcat's own 400
