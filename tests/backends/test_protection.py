"""``urlsan_backends`` end to end: a real ``urlsan proxy`` in reject and rewrite modes in front of
a real server that echoes the path it routes on.  Every request the server routes must be
routed on the path RFC 3986 reads in urlsan's canonical form of it (the reading urlsan's record,
mitmproxy's filters and the proxy's rules see); the others are answered 400 by urlsan (or
refused by the server itself) and recorded, naming the server and its reading."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.harness import ReverseProxy, raw_request
from urlsan.core import Policy, backends, canonicalize

from .corpus import clean, corpus
from .servers import SERVERS, expected_body
from .test_agreement import start

pytestmark = pytest.mark.e2e

PROXY_POLICY = Policy.profile("rfc3986").with_rules("+strip-fragment")
# Every target some modeled server reads otherwise than as its bytes, then a few clean ones;
# not those holding a space, tab, vertical tab or form feed, which mitmproxy's request-line
# parser takes as the separator before the version (the proxy then sees a shorter target).
_DIVERSE = [
    t for t in corpus() if not backends.plain(t) and not any(c in t for c in b" \t\x0b\x0c")
]
TARGETS = _DIVERSE[:: max(1, len(_DIVERSE) // 1500)] + clean()[:50]


def _routed_as_rfc(name: str, target: bytes, body: bytes) -> bool:
    """Whether ``body`` (the path the server routed on) is RFC 3986's reading of urlsan's
    canonical form of ``target``: the same segments, none holding a decoded "/"."""
    rfc = backends.rfc_segments(canonicalize(target, PROXY_POLICY, form="origin").url)
    return not any("/" in s for s in rfc) and body == expected_body(name, "/".join(rfc))


@pytest.mark.parametrize("mode", ["reject", "rewrite"])
@pytest.mark.parametrize(
    "name",
    [
        "tomcat",
        "nginx",
        "jetty",
        "go-mux",
        "caddy",
        "caddy-path",
        "lighttpd",
        "haproxy",
        "haproxy-path",
    ],
)
def test_a_protected_server_routes_only_the_rfc_reading(
    tmp_path: Path, name: str, mode: str
) -> None:
    assert name in SERVERS
    log = tmp_path / "audit.jsonl"
    settings = ("--set", f"urlsan_backends={name}", "--set", f"urlsan_mode={mode}")
    with start(name) as server, ReverseProxy(server.port, log, *settings) as proxy:  # type: ignore[attr-defined]
        with ThreadPoolExecutor(8) as pool:
            responses = list(pool.map(lambda t: raw_request(proxy.port, t), TARGETS))
        records = proxy.records()
    readings = [server.reading(r) for r in responses]  # type: ignore[attr-defined]
    routed_otherwise = [
        (t, r.path)
        for t, r in zip(TARGETS, readings, strict=True)
        if r.path is not None and not _routed_as_rfc(name, t, r.path)
    ]
    assert not routed_otherwise, routed_otherwise[:10]
    refused = [r for r in records if r.get("rejected_by") == "urlsan_backends"]
    assert refused, "the corpus holds targets this server reads otherwise"
    for record in refused:
        assert record["action"] == "rejected"
        assert [b["server"] for b in record["backends"]] == [name]
        assert any(f["rule"] == backends.FINDING for f in record["findings"])
    # The clean targets all reach the server, unchanged.
    clean_ok = [r.status for t, r in zip(TARGETS, readings, strict=True) if t in clean()]
    assert clean_ok and set(clean_ok) == {200}
