"""Every row of docs/security.md, as a test: what urlsan does by default and with each opt-in rule,
and what nginx (measured here, when installed) decodes from the same target.

A row: (row id, target, form, policy, expected canonical target or RAISES, findings expected).
Policies are written as in ``urlsan_profile`` / ``urlsan_rules``: "rfc3986" is the default
profile; "addon" is what the proxy runs by default (rfc3986 +strip-fragment).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hardening import support
from urlsan.core import InvalidTarget, Policy, canonicalize

RAISES = "InvalidTarget"


def policy(spec: str) -> Policy:
    if spec == "addon":
        return Policy.profile("rfc3986").with_rules("+strip-fragment")
    profile, _, rules = spec.partition(" ")
    p = Policy.profile(profile)
    return p.with_rules(rules) if rules else p


ROWS: list[tuple[str, str | bytes, str, str, str, set[str]]] = [
    # 1. ".." traversal
    ("dotdot", "/a/../b", "origin", "rfc3986", "/b", {"dot-segment"}),
    (
        "dotdot-above-root",
        "/../../etc/passwd",
        "origin",
        "rfc3986",
        "/etc/passwd",
        {"dot-segment", "dot-segment-above-root"},
    ),
    (
        "dotdot-opt-out",
        "/a/../b",
        "origin",
        "rfc3986 -remove-dot-segments",
        "/a/../b",
        {"dot-segment"},
    ),
    # 2. "%2e%2e"
    ("encoded-dotdot", "/a/%2e%2e/b", "origin", "rfc3986", "/b", {"encoded-dot-segment"}),
    ("encoded-dotdot-mixed", "/a/.%2E/b", "origin", "rfc3986", "/b", {"encoded-dot-segment"}),
    # 3. "..;/"
    ("dotdot-semicolon", "/a/..;/b", "origin", "rfc3986", "/a/..;/b", {"path-parameter-dotdot"}),
    (
        "dotdot-semicolon-crawler",
        "/a/..;/b",
        "origin",
        "crawler",
        "/a/..;/b",
        {"path-parameter-dotdot"},
    ),
    # 4. double encoding
    (
        "double-encoding",
        "/a/%252e%252e/b",
        "origin",
        "rfc3986",
        "/a/%252e%252e/b",
        {"double-encoding"},
    ),
    (
        "double-encoding-above-root",
        "/%252e%252e/%252e%252e/etc/passwd",
        "origin",
        "rfc3986",
        "/%252e%252e/%252e%252e/etc/passwd",
        {"double-encoding", "decoded-dot-segment-above-root"},
    ),
    (
        "double-encoding-hex-digits",
        "/%%32%65%%32%65/x",
        "origin",
        "rfc3986",
        "/%252e%252e/x",
        {"stray-percent", "double-encoding", "decoded-dot-segment-above-root"},
    ),
    # 4b. "%2E" inside a segment
    ("escaped-dot", "/index%2Ephp", "origin", "rfc3986", "/index.php", {"escaped-dot"}),
    # 4c. bidirectional and invisible characters
    (
        "format-char-escaped",
        "/a%E2%80%AEgnp.exe",
        "origin",
        "rfc3986",
        "/a%E2%80%AEgnp.exe",
        {"format-char"},
    ),
    (
        "format-char-raw",
        "/a\u202egnp.exe",
        "origin",
        "rfc3986",
        "/a%E2%80%AEgnp.exe",
        {"format-char"},
    ),
    ("format-char-strict", "/a\u202egnp.exe", "origin", "strict", RAISES, set()),
    # 5. "%2F"
    ("escaped-slash", "/a%2Fb", "origin", "rfc3986", "/a%2Fb", {"escaped-slash"}),
    (
        "escaped-slash-decode",
        "/a%2Fb",
        "origin",
        "rfc3986 +decode-escaped-slash",
        "/a/b",
        {"escaped-slash"},
    ),
    ("escaped-slash-reject", "/a%2Fb", "origin", "rfc3986 +reject-escaped-slash", RAISES, set()),
    ("escaped-slash-dotdot", "/a/..%2Fb", "origin", "rfc3986", "/a/..%2Fb", {"escaped-slash"}),
    (
        "escaped-slash-dotdot-decode",
        "/a/..%2Fb",
        "origin",
        "rfc3986 +decode-escaped-slash",
        "/b",
        {"escaped-slash"},
    ),
    (
        "escaped-slash-dotdot-reject",
        "/a/..%2Fb",
        "origin",
        "rfc3986 +reject-escaped-slash",
        RAISES,
        set(),
    ),
    # 6. "%5C" and raw backslash
    ("escaped-backslash", "/a%5Cb", "origin", "rfc3986", "/a%5Cb", {"escaped-slash"}),
    (
        "escaped-backslash-decode",
        "/a%5Cb",
        "origin",
        "rfc3986 +decode-escaped-slash",
        "/a%5Cb",
        {"escaped-slash"},
    ),
    (
        "escaped-backslash-decode-all",
        "/a%5C..%5Cb",
        "origin",
        "rfc3986 +decode-escaped-slash,+backslash-as-slash",
        "/b",
        {"escaped-slash"},
    ),
    (
        "escaped-backslash-reject",
        "/a%5Cb",
        "origin",
        "rfc3986 +reject-escaped-slash",
        RAISES,
        set(),
    ),
    ("backslash", "/a\\..\\b", "origin", "rfc3986", "/a%5C..%5Cb", {"backslash"}),
    (
        "backslash-as-slash",
        "/a\\..\\b",
        "origin",
        "rfc3986 +backslash-as-slash",
        "/b",
        {"backslash"},
    ),
    ("backslash-strict", "/a\\b", "origin", "strict", RAISES, set()),
    # 7. NUL
    ("nul-escape", "/a%00.jpg", "origin", "rfc3986", "/a%00.jpg", {"nul-escape"}),
    ("nul-raw", "/a\x00b", "origin", "rfc3986", "/a%00b", set()),
    ("nul-raw-strict", "/a\x00b", "origin", "strict", RAISES, set()),
    # 8. CR LF
    (
        "crlf-escape",
        "/a%0d%0aSet-Cookie:x",
        "origin",
        "rfc3986",
        "/a%0D%0ASet-Cookie:x",
        {"crlf-escape"},
    ),
    ("crlf-raw", "/a\r\nX: y", "origin", "rfc3986", "/a%0D%0AX:%20y", set()),
    # 9. overlong UTF-8
    (
        "overlong-escaped",
        "/%c0%ae%c0%ae/x",
        "origin",
        "rfc3986",
        "/%C0%AE%C0%AE/x",
        {"overlong-utf8"},
    ),
    (
        "overlong-raw",
        b"/\xc0\xae\xc0\xae/x",
        "origin",
        "rfc3986",
        "/%C0%AE%C0%AE/x",
        {"overlong-utf8"},
    ),
    # 10. %uXXXX
    ("percent-u", "/%u002e%u002e/x", "origin", "rfc3986", "/%25u002e%25u002e/x", {"percent-u"}),
    ("percent-u-strict", "/%u002e%u002e/x", "origin", "strict", RAISES, set()),
    # 11. fullwidth characters
    (
        "fullwidth-dots",
        "/\uff0e\uff0e/a",
        "origin",
        "rfc3986",
        "/%EF%BC%8E%EF%BC%8E/a",
        {"nfkc-separator"},
    ),
    ("fullwidth-solidus", "/a\uff0fb", "origin", "rfc3986", "/a%EF%BC%8Fb", {"nfkc-separator"}),
    (
        "fullwidth-escaped",
        "/%EF%BC%8E%EF%BC%8E/a",
        "origin",
        "rfc3986",
        "/%EF%BC%8E%EF%BC%8E/a",
        {"nfkc-separator"},
    ),
    ("fullwidth-strict", "/\uff0e\uff0e/a", "origin", "strict", RAISES, set()),
    # 12. fragment smuggling
    ("fragment-smuggling", "/a#/../../admin", "origin", "addon", "/a", set()),
    ("fragment-kept-rfc3986", "/a#/../../admin", "origin", "rfc3986", "/a#/../../admin", set()),
    ("escaped-hash", "/a%23/../b", "origin", "addon", "/b", {"dot-segment"}),
    # 13. numeric hosts
    (
        "numeric-host-hex",
        "http://0x7f.1/",
        "absolute",
        "rfc3986",
        "http://0x7f.1/",
        {"numeric-host"},
    ),
    (
        "numeric-host-hex-rewrite",
        "http://0x7f.1/",
        "absolute",
        "rfc3986 +numeric-host",
        "http://127.0.0.1/",
        {"numeric-host"},
    ),
    (
        "numeric-host-decimal",
        "http://2130706433/",
        "absolute",
        "rfc3986 +numeric-host",
        "http://127.0.0.1/",
        {"numeric-host"},
    ),
    (
        "numeric-host-octal",
        "http://0177.0.0.1/",
        "absolute",
        "crawler",
        "http://127.0.0.1/",
        {"numeric-host"},
    ),
    (
        "userinfo-bait",
        "http://good.example@evil.example/",
        "absolute",
        "rfc3986",
        "http://good.example@evil.example/",
        {"userinfo"},
    ),
]


@pytest.mark.parametrize(
    ("row", "target", "form", "spec", "expected", "findings"), ROWS, ids=[r[0] for r in ROWS]
)
def test_row(
    row: str, target: str | bytes, form: str, spec: str, expected: str, findings: set[str]
) -> None:
    support.FIGURES["security table rows checked"] += 1
    p = policy(spec)
    if expected == RAISES:
        with pytest.raises(InvalidTarget):
            canonicalize(target, p, form=form)
        return
    result = canonicalize(target, p, form=form)
    assert result.url == expected
    assert findings <= {f.rule for f in result.findings}, result.findings


# What nginx 1.22 (merge_slashes off) decodes into $uri, or 400: the "nginx" column.
NGINX: list[tuple[bytes, int, bytes]] = [
    (b"/a/../b", 200, b"/b"),
    (b"/../b", 400, b""),
    (b"/a/%2e%2e/b", 200, b"/b"),
    (b"/a/..;/b", 200, b"/a/..;/b"),
    (b"/a/%252e%252e/b", 200, b"/a/%2e%2e/b"),
    (b"/%252e%252e/%252e%252e/etc/passwd", 200, b"/%2e%2e/%2e%2e/etc/passwd"),
    (b"/%%32%65%%32%65/x", 400, b""),
    (b"/%252e%252e/x", 200, b"/%2e%2e/x"),  # the same, as urlsan forwards it
    (b"/index%2Ephp", 200, b"/index.php"),
    (b"/a%E2%80%AEgnp.exe", 200, b"/a\xe2\x80\xaegnp.exe"),
    (b"/a%2Fb", 200, b"/a/b"),
    (b"/a/..%2Fb", 200, b"/b"),  # nginx decodes %2F, then resolves: the escaped slash climbs
    (b"/a%5C..%5Cb", 200, b"/a\\..\\b"),
    (b"/a%00.jpg", 400, b""),
    (b"/a%0D%0AX", 200, b"/a\r\nX"),
    (b"/%C0%AE%C0%AE/x", 200, b"/\xc0\xae\xc0\xae/x"),
    (b"/%u002e%u002e/x", 400, b""),
    (b"/%25u002e%25u002e/x", 200, b"/%u002e%u002e/x"),
    (b"/%EF%BC%8E%EF%BC%8E/a", 200, "/\uff0e\uff0e/a".encode()),
    (b"/a#/../../admin", 200, b"/a"),
    (b"/a%23/../b", 200, b"/b"),
]


@pytest.fixture(scope="module")
def nginx() -> Iterator[support.Nginx]:
    binary = support.nginx_binary()
    if binary is None:
        pytest.skip(support.NGINX_MISSING)
    with support.Nginx(binary) as n:
        yield n


@pytest.mark.e2e
def test_nginx_column(nginx: support.Nginx) -> None:
    seen = {}
    for i, (target, _, _) in enumerate(NGINX):
        seen[i] = support.raw_request(nginx.port, target, {"X-Case": str(i)}).status
    records = {r.case: r for r in nginx.records()}
    support.FIGURES["requests sent to nginx"] += len(NGINX)
    for i, (target, status, uri) in enumerate(NGINX):
        assert seen[i] == status, target
        if status == 200:
            assert records[str(i).encode()].uri == uri, target
