"""The meaning corpus through the real proxy (``urlsan proxy``, reverse mode) to nginx and werkzeug.

What the upstream decodes from a target sent through the proxy must be what it decodes from the
canonical form sent directly (test_meaning.py shows that this is what it decodes from the raw
target, or a repair of it); and the audit log must hold exactly one valid JSON record for every
request the addon touched.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.hardening import support
from tests.hardening.judge import REFUSED, NginxJudge, Server, WerkzeugJudge, is_sendable, same
from tests.hardening.test_meaning import POLICIES, REWRITES, TARGETS
from urlsan.core import canonicalize

pytestmark = pytest.mark.e2e
ADDON = "addon (rfc3986 +strip-fragment)"


@pytest.fixture(scope="module", autouse=True)
def addon_present() -> None:
    reason = support.addon_missing()
    if reason:
        pytest.skip(reason)


def sendable() -> list[bytes]:
    return [t for t in TARGETS if is_sendable(t)]


def through(
    direct: Server, proxied: Server, proxy: support.Proxy
) -> tuple[Counter[str], list[str]]:
    """Send the corpus through the proxy and the canonical forms directly; compare."""
    targets = sendable()
    canonical = REWRITES[ADDON]
    want = direct.meanings([canonical[t] for t in targets])
    got = proxied.meanings(targets)
    counts: Counter[str] = Counter()
    failures = []
    for t in targets:
        m_got, m_want = got[t], want[canonical[t]]
        if m_got[0] == REFUSED:
            # mitmproxy's own HTTP/1 reader refuses request lines it cannot parse (a space, a
            # control character); the addon never sees them.
            if m_got[2] == "proxy":
                counts[f"refused by mitmproxy ({m_got[1]})"] += 1
            elif m_want[0] == "ok":
                failures.append(f"{t!r}: upstream refused {m_got!r}, canonical form accepted")
            else:
                counts[f"refused by {direct.name} ({m_got[1]}), as canonical"] += 1
        elif m_want[0] != "ok":
            failures.append(f"{t!r}: proxied accepted {m_got!r}, canonical refused {m_want!r}")
        elif not same(m_got, m_want):
            failures.append(f"{t!r}: proxied {m_got!r} != canonical {m_want!r}")
        else:
            counts["as canonical"] += 1
    support.NOTES.append(
        f"through urlsan proxy -> {direct.name}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    check_audit_log(proxy, [t for t in targets if got[t][0] != REFUSED or got[t][2] != "proxy"])
    return counts, failures


def check_audit_log(proxy: support.Proxy, forwarded: list[bytes]) -> None:
    """One valid JSON record per touched request: changed, or with a finding."""
    policy = POLICIES[ADDON]
    expected: Counter[str] = Counter()
    for t in forwarded:
        r = canonicalize(t, policy, form="origin")
        if r.changed or r.findings:
            expected[r.input] += 1
    records = proxy.records()  # every line must parse as one JSON object
    support.FIGURES["audit records checked"] += len(records)
    got = Counter(rec["before"] for rec in records)
    assert sum(got.values()) == sum(expected.values()), (
        f"{sum(got.values())} audit records for {sum(expected.values())} touched requests; "
        f"missing {list((expected - got).items())[:5]}, extra {list((got - expected).items())[:5]}"
    )
    assert got == expected


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("proxy")


def test_corpus_through_proxy_to_nginx(tmp: Path) -> None:
    binary = support.nginx_binary()
    if binary is None:
        pytest.skip(support.NGINX_MISSING)
    with support.Nginx(binary) as nginx, support.Proxy(nginx.port, tmp / "nginx.jsonl") as proxy:
        direct = NginxJudge(nginx)
        proxied = NginxJudge(nginx, port=proxy.port, name="urlsan proxy -> nginx", keep_alive=True)
        counts, failures = through(direct, proxied, proxy)
    assert not failures, "\n".join(failures[:30])
    assert counts["as canonical"] > 1000


def test_corpus_through_proxy_to_werkzeug(tmp: Path) -> None:
    with support.Werkzeug() as server, support.Proxy(server.port, tmp / "wz.jsonl") as proxy:
        direct = WerkzeugJudge(server)
        proxied = WerkzeugJudge(
            # No keep-alive here: the dev server writes head and body apart, and Nagle plus
            # delayed ACKs then stall every reused connection for 40 ms.
            server,
            port=proxy.port,
            name="urlsan proxy -> werkzeug",
        )
        counts, failures = through(direct, proxied, proxy)
    assert not failures, "\n".join(failures[:30])
    assert counts["as canonical"] > 1000


def test_direct_meanings_cover_the_corpus() -> None:
    # The through-proxy tests rely on test_meaning's tables.
    assert set(REWRITES[ADDON]) == set(TARGETS)
