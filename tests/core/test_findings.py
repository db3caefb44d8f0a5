"""Findings: stable names, the component they are in, and offsets into the input."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from urlsan.core import Finding, Policy, canonicalize, compiled
from urlsan.core.backends import FINDING as BACKEND_FINDING
from urlsan.core.canonical import canonicalize_python
from urlsan.core.findings import FINDING_NAMES, NFKC_SEPARATORS
from urlsan.core.result import MAX_OFFSETS
from urlsan.core.taxonomy import KINDS

# (target, finding name, component, offset of the first occurrence, detail)
CASES = [
    ("/a/./b", "dot-segment", "path", 3, "."),
    ("/a/../b", "dot-segment", "path", 3, ".."),
    ("/a/%2e%2E/b", "encoded-dot-segment", "path", 3, "%2e%2E"),
    ("/a/.%2e/b", "encoded-dot-segment", "path", 3, ".%2e"),
    ("/a/%2e/b", "encoded-dot-segment", "path", 3, "%2e"),
    ("/../etc/passwd", "dot-segment-above-root", "path", 1, ".."),
    ("/a/../../b", "dot-segment-above-root", "path", 6, ".."),
    ("http://h/%2e%2e/x", "dot-segment-above-root", "path", 9, "%2e%2e"),
    ("/..;/admin", "path-parameter-dotdot", "path", 1, "..;"),
    ("/a/..;jsessionid=1/b", "path-parameter-dotdot", "path", 3, "..;jsessionid=1"),
    ("/a%2fb", "escaped-slash", "path", 2, "%2f"),
    ("/a%5Cb", "escaped-slash", "path", 2, "%5C"),
    ("/a\\b", "backslash", "path", 2, "\\"),
    ("/%252e%252e/", "double-encoding", "path", 1, "%252e"),
    ("/?q=%2541", "double-encoding", "query", 4, "%2541"),
    ("/%c0%ae%c0%ae/", "overlong-utf8", "path", 1, "%c0%ae"),
    ("/%e0%80%af", "overlong-utf8", "path", 1, "%e0%80"),
    ("/\udcc0\udcae", "overlong-utf8", "path", 1, "\udcc0\udcae"),
    ("/%u002e%u002e/", "percent-u", "path", 1, "%u002e"),
    ("/a%00.jpg", "nul-escape", "path", 2, "%00"),
    ("/?q=%00", "nul-escape", "query", 4, "%00"),
    ("/a%0d%0aSet-Cookie:x", "crlf-escape", "path", 2, "%0d"),
    ("/#%0A", "crlf-escape", "fragment", 2, "%0A"),
    ("http://0x7f.1/", "numeric-host", "host", 7, "0x7f.1"),
    ("http://0177.0.0.1/", "numeric-host", "host", 7, "0177.0.0.1"),
    ("http://2130706433/", "numeric-host", "host", 7, "2130706433"),
    ("http://127.1/", "numeric-host", "host", 7, "127.1"),
    ("http://user@h/", "userinfo", "userinfo", 7, "user"),
    ("http://user:pw@h/", "userinfo", "userinfo", 7, "password"),
    ("http://\u2603.net/", "invalid-idn", "host", 7, "\u2603.net"),
    # A malformed authority keeps its split (issue #14): the port that is no number stays in
    # the host, an unclosed IP-literal is all host; both are escaped there, and said.
    ("http://a:-1/", "invalid-port", "host", 8, ":-1"),
    ("http://[::1/", "invalid-ip-literal", "host", 7, "[::1"),
    ("http://u@[zz]:80/x", "invalid-ip-literal", "host", 9, "[zz]"),
    # What one decode makes of the input: an escape whose hex digits were escaped themselves,
    # or whose "%" was stray ("%2e" once decoded), and the "%" a decoder has to guess about
    ("/a%%32%65", "double-encoding", "path", 2, "%%32%65"),
    ("/?q=%25%37%33", "double-encoding", "query", 4, "%25%37%33"),
    ("/a%zz", "stray-percent", "path", 2, "%"),
    ("/%252e%252e/x", "decoded-dot-segment-above-root", "path", 0, "/../x"),
    ("/%c0%2e%c0%2e/etc", "overlong-utf8", "path", 1, "%c0%2e"),
    ("/a%c0", "overlong-utf8", "path", 2, "%c0"),
    ("/a%ff", "invalid-utf8", "path", 2, "%ff"),
    ("/a?\udcff", "invalid-utf8", "query", 3, "\udcff"),
    ("/get/index%2Epdf", "escaped-dot", "path", 10, "%2E"),
    ("/a b", "raw-space", "path", 2, " "),
    ("/a\x01", "control-char", "path", 2, "\x01"),
    ("/a%E2%80%AEb", "format-char", "path", 2, "%E2%80%AE"),
    ("/a?\u202e", "format-char", "query", 3, "\u202e"),
    # What Unicode compatibility normalization (NFKC) makes a dot segment or a separator
    ("/\uff0e\uff0e/etc", "nfkc-separator", "path", 1, "\uff0e"),
    ("/x/%ef%bc%8e%EF%BC%8E/etc", "nfkc-separator", "path", 3, "%ef%bc%8e"),
    ("/a\uff0fb", "nfkc-separator", "path", 2, "\uff0f"),
    ("/a\\\ufe68b", "nfkc-separator", "path", 3, "\ufe68"),
    ("/a/%EF%BC%85%32%65", "nfkc-separator", "path", 3, "%EF%BC%85"),
    ("http://h/\u2025;jsessionid=1/x", "nfkc-separator", "path", 9, "\u2025"),
]


def _find(target: str, name: str) -> Finding:
    found = [f for f in canonicalize(target).findings if f.rule == name]
    assert len(found) == 1, canonicalize(target).findings
    return found[0]


@pytest.mark.parametrize(("target", "name", "component", "offset", "detail"), CASES)
def test_finding(target: str, name: str, component: str, offset: int, detail: str) -> None:
    finding = _find(target, name)
    assert (finding.component, finding.offset, finding.detail) == (component, offset, detail)
    if name not in ("numeric-host", "userinfo", "invalid-idn", "decoded-dot-segment-above-root"):
        assert target[offset : offset + len(detail)] == detail


def test_every_finding_name_is_exercised() -> None:
    # The backends' finding is the proxy's decision's (tests/addon/test_decision.py)
    assert {name for _, name, *_ in CASES} | {BACKEND_FINDING} == set(FINDING_NAMES)


@pytest.mark.parametrize(
    "target",
    [
        "/a/b.c/d..e/.f/g.",
        "/...",
        "/a%2541",  # not a dot: "%25" is an escaped "%"
        "http://127.0.0.1/",
        "http://[::1]/",
        "http://example.com/",
        "/a;b/c",
        "/?q=%20",
        "http://1.2.3.4.5/",
        "/wait\u2026what/x",  # a dot-like character in a longer segment: no dot segment
        "/news/%E2%80%A6",  # an ellipsis alone ("...") is no dot segment either
        "/a?q=\uff0e\uff0e",  # the query is no path
    ],
)
def test_no_finding(target: str) -> None:
    names = {f.rule for f in canonicalize(target).findings}
    assert names <= {"double-encoding"}, names
    if "%25" not in target:
        assert names == set()


def test_findings_are_counted_per_rule_and_component() -> None:
    finding = _find("/a/../b/../c/..", "dot-segment")
    assert finding.offset == 3
    assert finding.occurrences == 3


def test_findings_do_not_depend_on_the_profile() -> None:
    # Detectors read the raw input: turning rules off must not hide an attack.
    target = "/a/%2e%2e/..;/b%2f%00?x=%0d"
    default = canonicalize(target).findings
    assert default
    for policy in (
        Policy.profile("crawler"),
        Policy.profile("rfc2396"),
        Policy().with_rules("-remove-dot-segments,-decode-unreserved"),
    ):
        assert canonicalize(target, policy).findings == default


def test_findings_are_reported_when_the_target_is_unchanged() -> None:
    result = canonicalize("/a%2Fb")
    assert not result.changed
    assert [f.rule for f in result.findings] == ["escaped-slash"]


def test_strict_profile_does_not_raise_for_findings_alone() -> None:
    # "%2F" is valid RFC 3986: strict refuses repairs, not suspicious-but-valid input.
    result = canonicalize("/a%2Fb/%00", Policy.profile("strict"))
    assert {f.rule for f in result.findings} == {"escaped-slash", "nul-escape"}


def test_severity_reads_the_finding_and_its_context() -> None:
    def severities(target: str) -> dict[str, str]:
        return {f.rule: f.severity for f in canonicalize(target).findings}

    assert severities("/a/./b") == {"dot-segment": "info"}  # noise
    assert severities("/a/./b/../c") == {"dot-segment": "low"}  # a ".." among them
    assert severities("/../etc/passwd")["dot-segment-above-root"] == "high"
    assert severities("/%252e%252e/etc")["decoded-dot-segment-above-root"] == "critical"
    assert severities("/?next=%252F")["double-encoding"] == "low"  # a URL nested in a query
    assert severities("/%252F")["double-encoding"] == "medium"
    assert severities("http://u:pw@h/")["userinfo"] == "medium"
    assert canonicalize("/a%00").findings[0].weaknesses == ("CWE-158", "CAPEC-52")


def test_every_occurrence_is_located_up_to_a_cap() -> None:
    (finding,) = canonicalize("/a/../b/../c/..").findings
    assert finding.offsets == (3, 8, 13) == finding.where
    assert canonicalize("/a/./b").findings[0].offsets == ()  # one: it is at offset
    assert canonicalize("/a/./b").findings[0].where == (3,)
    many = canonicalize("/" + "a%00" * 40).findings[0]
    assert many.occurrences == 40 and len(many.offsets) == MAX_OFFSETS
    assert many.offsets == tuple(range(2, 2 + 4 * MAX_OFFSETS, 4))


def test_the_nfkc_separators_are_every_character_nfkc_makes_one() -> None:
    """findings.NFKC_SEPARATORS, which the compiled twin is handed too, is what Unicode's own
    data says (the Python that runs urlsan: its unicodedata)."""
    derived = "".join(
        chr(c)
        for c in range(0x80, sys.maxunicode + 1)
        if (n := unicodedata.normalize("NFKC", chr(c))) and set(n) <= set("./\\%")
    )
    assert derived == NFKC_SEPARATORS


# --- each finding kind as declared (urlsan.core.taxonomy.KINDS): its examples carry it


def _examples() -> list[tuple[str, str]]:
    return [(name, example) for name, kind in KINDS.items() for example in kind.examples]


def test_each_kind_is_declared_with_what_it_flags_and_examples() -> None:
    for name, kind in KINDS.items():
        assert kind.flags, name
        # the backends' finding is the proxy's decision's, not canonicalize's
        assert kind.examples or name == BACKEND_FINDING, name


@pytest.mark.parametrize(("name", "example"), _examples())
def test_each_kind_is_found_in_its_examples_on_the_compiled_path(name: str, example: str) -> None:
    assert name in {f.rule for f in canonicalize_python(example).findings}
    assert name in {f.rule for f in canonicalize(example).findings}
    if compiled.twin is None:
        return
    # The compiled twin serves every kind; an IDN host is the idna package's (the driver).
    host = example.partition("://")[2].partition("/")[0]
    assert compiled.declined() == (None if host.isascii() else "non-ASCII host (IDN)"), example


def test_the_compiled_twin_reports_the_declared_kinds() -> None:
    # Checked when it loads (core/compiled.py); here, which kinds it leaves to others and why.
    if compiled.twin is None:
        pytest.skip("the compiled twin is not built")
    from urlsan.core import _speedups

    assert set(_speedups.FINDINGS) <= set(KINDS)
    assert set(KINDS) - set(_speedups.FINDINGS) == {
        BACKEND_FINDING,  # the proxy's decision's
        "invalid-idn",  # a non-ASCII host: the idna package's, in the driver
    }
