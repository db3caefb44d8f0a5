"""A target's severity is what its worst reader makes of it (urlsan.core.severity): the classes
of docs/findings.md, each with the reader and path its reason names, computed from the Result
the compiled twin returns."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from urlsan.core import canonicalize, severity
from urlsan.core.backends import FINDING
from urlsan.core.result import Finding


def assessed(target: str, servers: tuple[str, ...] = ()) -> severity.Severity | None:
    result = canonicalize(target, form="origin" if target.startswith("/") else "auto")
    return severity.assess(result.input, result.findings, servers)


@pytest.mark.parametrize(
    ("target", "level", "reader", "path"),
    [
        # a reader reaches above the root
        ("/.//..//etc/passwd", "critical", "go", "/../etc/passwd"),  # slashes merged
        ("/a//../../etc/passwd", "critical", "go", "/../etc/passwd"),
        ("//../etc/passwd", "critical", "go", "/../etc/passwd"),
        ("/\\../etc/passwd", "critical", "a Windows file path", "/../etc/passwd"),
        ("/%5c../etc/passwd", "critical", "a Windows file path", "/../etc/passwd"),
        ("/app/%252e%252e/%252e%252e/x", "critical", "a second decode", "/../x"),
        ("/%c0%ae%c0%ae/etc/hosts", "critical", "a lenient UTF-8 decoder", "/../etc/hosts"),
        (
            "/s/\uff0e\uff0e/\uff0e\uff0e/web.config",
            "critical",
            "NFKC normalization",
            "/../web.config",
        ),
        # a reader climbs out of the directory RFC 3986 keeps the request in
        ("/a//../b", "high", "nginx", "/b"),
        ("/a/..%2f/b", "high", "nginx", "/b"),
        ("/api/..;/admin/users", "high", "tomcat", "/admin/users"),
        # a parameter's value, decoded twice, joined to a handler's folder
        (
            "/dl?file=%252e%252e%252fsecrets",
            "high",
            "a handler joining parameter 'file'",
            "../secrets",
        ),
    ],
)
def test_the_worst_reader_decides(target: str, level: str, reader: str, path: str) -> None:
    got = assessed(target)
    assert got is not None
    assert (got.level, got.path) == (level, path), got
    assert got.reader.startswith(reader), got
    assert reader.split(" (")[0] in got.reason and path in got.reason


@pytest.mark.parametrize(
    "target",
    [
        "/?lang=foobar%0d%0aContent-Length:%200%0d%0a%0d%0aHTTP/1.1%20200%20OK",
        "/r%0d%0aSet-Cookie:%20sid=1",
        "/a\r\nb",
        "/?q=%250d%250a",  # once a second decoder reads it
        "/#x%0ay",  # in any component
    ],
)
def test_cr_or_lf_anywhere_is_header_injection(target: str) -> None:
    got = assessed(target)
    assert got is not None and got.level == "high", got
    assert "CWE-113" in got.reason


@pytest.mark.parametrize(
    ("target", "cut"),
    [("/upload/shell.php%00.png", "/upload/shell.php"), ("/dl?f=a%00", "/dl?f=a")],
)
def test_nul_where_a_c_string_ends_is_high(target: str, cut: str) -> None:
    got = assessed(target)
    assert got is not None and (got.level, got.path) == ("high", cut), got


@pytest.mark.parametrize(
    ("target", "finding"),
    [
        ("/q/%25%37%33ecret", "double-encoding"),
        ("/lone/%c0", "overlong-utf8"),
        ("/scripts/%u0065vil.asp", "percent-u"),
        ("/upload/shell%2ephp", "escaped-dot"),
        ("http://0x7f000001/admin", "numeric-host"),
    ],
)
def test_an_encoding_that_hides_a_character_is_medium(target: str, finding: str) -> None:
    got = assessed(target)
    assert got is not None and got.level == "medium", got
    assert got.reason.startswith(finding)


@pytest.mark.parametrize(
    "target",
    [
        "/chapter/10.1007%2F978-1-4471-6374-9_5",  # a DOI
        "/old/site\\%20name/page.htm",  # an old site's "\%20"
        "/a/../b",  # every reader removes the ".." RFC 3986 removes
        "/a b/c",
        "/tab\tname",  # mangled text
        "/caf%E9/menu",  # Latin-1, no UTF-8
        "/login?next=https%253A%252F%252Fexample.com%252F..%252Fb",  # a nested redirect URL
        "/p/%zz/50%",
    ],
)
def test_what_climbs_nowhere_stays_low(target: str) -> None:
    got = assessed(target)
    assert got is not None and got.level in ("low", "info"), got
    assert got.path == ""


def test_a_target_without_findings_is_not_assessed() -> None:
    assert assessed("/a/b?c=d") is None


def test_the_servers_named_decide_alone() -> None:
    # Tomcat reads "/a/../b" as RFC 3986 does and refuses above the root: nothing climbs
    assert assessed("/a/../b", ("tomcat",)).level == "low"  # type: ignore[union-attr]
    assert assessed("/files/../../etc/shadow", ("tomcat",)).level == "low"  # type: ignore[union-attr]
    # ... but merges slashes: "/a//../b" climbs out of /a/
    got = assessed("/a//../b", ("tomcat",))
    assert got is not None and (got.level, got.reader) == ("high", "tomcat")
    # no lenient reader speaks for a proxy whose servers are named
    assert assessed("/%5c../etc/passwd", ("tomcat",)).level == "low"  # type: ignore[union-attr]
    assert assessed("/%5c../etc/passwd", ()).level == "critical"  # type: ignore[union-attr]


def test_a_divergence_the_decision_found_stays_high() -> None:
    detail = "nginx routes it as '/b' where RFC 3986 reads 'a/%2F/b'"
    got = severity.assess("/a/%2F/b", (Finding(FINDING, "path", 0, detail),), ("nginx",))
    assert got is not None and (got.level, got.reason) == ("high", detail)


def test_a_long_target_is_ranked_by_its_findings() -> None:
    long = "/a" * severity.MAX_READ + "/../../../etc/passwd"
    got = assessed(long)
    assert got is not None and got.level == "low"


def test_no_severity_sends_a_url_to_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from urlsan.core import canonical

    result = canonicalize("/a//../../etc/passwd", form="origin")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("severity canonicalized again")

    monkeypatch.setattr(canonical, "canonicalize", refuse)
    monkeypatch.setattr(canonical, "canonicalize_python", refuse)
    got = severity.assess(result.input, result.findings)
    assert got is not None and got.level == "critical"


_TOKENS = [
    "a",
    "b",
    "..",
    ".",
    "%2e",
    "%2E.",
    "/",
    "//",
    "\\",
    "%2f",
    "%5c",
    ";x",
    "%3B",
    "%25",
    "%c0%ae",
    "?",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=10))
@example(["a", "/", "b", "/", "..", "//", "c"])
@example(["a", "//", "..", "/", "..", "/", "b"])
@example(["a", "/", "..", "/", "\\", "/"])  # "/a/../\/": IIS reads the "\" as a "/"
def test_one_reader_speaks_for_all_only_where_all_agree(tokens: list[str]) -> None:
    """Where `assess` lets the file-path join speak for every reader, every reader run says the
    same severity."""
    target = "/" + "".join(tokens)
    result = canonicalize(target, form="origin")
    if not result.findings:
        return
    quick = severity.assess(result.input, result.findings)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(severity, "_HIDDEN_DOT", re.compile(""))  # every target read by every reader
        full = severity.assess(result.input, result.findings)
    assert quick is not None and full is not None
    assert quick.level == full.level, (target, quick, full)
