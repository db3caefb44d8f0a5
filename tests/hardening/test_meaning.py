"""Meaning kept, judged by real servers (issue #5): nginx and werkzeug decode the same from the
raw target and from urlsan's canonical form, or refuse the raw one and accept the repair.

Sent directly, with raw sockets: the request line holds exactly the bytes under test.  The same
corpus goes through the real proxy in test_proxy.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hardening import support
from tests.hardening.corpus import corpus
from tests.hardening.judge import (
    Meaning,
    NginxJudge,
    Verdicts,
    WerkzeugJudge,
    judge,
    minimal_repair,
)
from urlsan.core import Policy, canonicalize

# The default profile, and what the addon runs for a request-target.
POLICIES = {
    "rfc3986": Policy.profile("rfc3986"),
    "addon (rfc3986 +strip-fragment)": Policy.profile("rfc3986").with_rules("+strip-fragment"),
}
TARGETS = corpus()


def rewrite(policy: Policy) -> dict[bytes, bytes]:
    out = {}
    for raw in TARGETS:
        url = canonicalize(raw, policy, form="origin").url
        # RFC 9112 §3.2: a request-target is visible ASCII; anything else on the wire is a bug.
        assert url.isascii() and url.isprintable() and " " not in url, (raw, url)
        out[raw] = url.encode("ascii")
    return out


REWRITES = {name: rewrite(p) for name, p in POLICIES.items()}
support.FIGURES["meaning: corpus targets"] = len(TARGETS)


def werkzeug_misreads(raw: bytes) -> bool:
    # The dev server (http.server underneath) decodes the request line as latin-1 and hands raw
    # non-ASCII bytes to the app re-encoded as UTF-8 ("/é" arrives as "/Ã©"); and it collapses a
    # leading run of slashes (CPython gh-87389) or reads "//x" as an authority: "//a/.." reaches
    # the app as "/a/.." where RFC 3986 reads the path "//".
    return not raw.isascii() or raw.startswith(b"//")


def werkzeug_faithful(raw: bytes) -> bytes:
    """The target werkzeug reads as RFC 3986 reads ``raw``: escaped, and "//" kept a path."""
    repaired = minimal_repair(raw)
    return b"/." + repaired if repaired.startswith(b"//") else repaired


def all_sent() -> list[bytes]:
    sent = list(TARGETS)
    for table in REWRITES.values():
        sent += table.values()
    sent += [minimal_repair(t) for t in TARGETS]
    sent += [werkzeug_faithful(t) for t in TARGETS]
    return sent


@pytest.fixture(scope="module")
def nginx_meanings() -> Iterator[dict[bytes, Meaning]]:
    binary = support.nginx_binary()
    if binary is None:
        pytest.skip(support.NGINX_MISSING)
    with support.Nginx(binary) as nginx:
        yield NginxJudge(nginx).meanings(all_sent())


@pytest.fixture(scope="module")
def werkzeug_meanings() -> Iterator[dict[bytes, Meaning]]:
    with support.Werkzeug() as server:
        yield WerkzeugJudge(server).meanings(all_sent())


def report(v: Verdicts) -> None:
    support.NOTES.append(v.summary())
    for verdict, examples in sorted(v.examples.items()):
        if not verdict.startswith("same"):
            support.NOTES.append(f"    {verdict}: e.g. {', '.join(map(repr, examples))}")
    assert not v.failures, "\n".join(v.failures[:40])


@pytest.mark.e2e
@pytest.mark.parametrize("policy", POLICIES)
def test_nginx_decodes_the_same(policy: str, nginx_meanings: dict[bytes, Meaning]) -> None:
    v = judge("nginx", policy, TARGETS, REWRITES[policy].__getitem__, nginx_meanings)
    report(v)
    assert v.counts["same"] + v.counts["unchanged"] > 1000


@pytest.mark.e2e
@pytest.mark.parametrize("policy", POLICIES)
def test_werkzeug_decodes_the_same(policy: str, werkzeug_meanings: dict[bytes, Meaning]) -> None:
    v = judge(
        "werkzeug",
        policy,
        TARGETS,
        REWRITES[policy].__getitem__,
        werkzeug_meanings,
        raw_is_misread=werkzeug_misreads,
        faithful=werkzeug_faithful,
    )
    report(v)
    assert v.counts["same"] + v.counts["unchanged"] > 1000


def test_canonical_form_is_a_fixed_point() -> None:
    for name, table in REWRITES.items():
        for raw, new in table.items():
            again = canonicalize(new, POLICIES[name], form="origin").url.encode()
            assert again == new, (name, raw, new, again)
