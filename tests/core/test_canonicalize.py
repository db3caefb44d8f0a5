"""`canonicalize`: the public API, the request-target forms, and what `edits` say."""

from __future__ import annotations

import pickle

import pytest

import urlsan.core
from urlsan.core import RULES, Edit, Finding, InvalidTarget, Policy, Result, canonicalize
from urlsan.core.result import FOLD_AFTER


def test_public_api() -> None:
    for name in ("canonicalize", "Policy", "Result", "Edit", "Finding", "InvalidTarget", "RULES"):
        assert name in urlsan.core.__all__
    assert isinstance(RULES, tuple)
    assert issubclass(InvalidTarget, ValueError)


def test_issue_example() -> None:
    r = canonicalize("HTTP://Example.COM:80/%7euser/./a/../b%2fc?q=%41 b")
    assert isinstance(r, Result)
    assert r.url == "http://example.com/~user/b%2Fc?q=A%20b"
    assert r.changed
    assert r.input == "HTTP://Example.COM:80/%7euser/./a/../b%2fc?q=%41 b"
    assert all(isinstance(e, Edit) for e in r.edits)
    assert all(isinstance(f, Finding) for f in r.findings)
    assert [(e.rule, e.component, e.start, e.end, e.before, e.after) for e in r.edits] == [
        ("lowercase-scheme", "scheme", 0, 4, "HTTP", "http"),
        ("lowercase-host", "host", 7, 18, "Example.COM", "example.com"),
        ("drop-default-port", "port", 18, 21, ":80", ""),
        ("decode-unreserved", "path", 22, 25, "%7e", "~"),
        ("uppercase-escape", "path", 38, 41, "%2f", "%2F"),
        ("remove-dot-segments", "path", 21, 42, "/~user/./a/../b%2Fc", "/~user/b%2Fc"),
        ("decode-unreserved", "query", 45, 48, "%41", "A"),
        ("encode-unsafe", "query", 48, 49, " ", "%20"),
    ]
    assert {f.rule for f in r.findings} == {"escaped-slash", "dot-segment", "raw-space"}


def test_unchanged() -> None:
    r = canonicalize("http://example.com/a?b#c")
    assert r.url == r.input
    assert not r.changed
    assert r.edits == ()


def test_as_dict_is_json_ready() -> None:
    d = canonicalize("/a b").as_dict()
    assert d["url"] == "/a%20b"
    assert d["edits"][0]["rule"] == "encode-unsafe"


def test_results_are_immutable_and_picklable() -> None:
    r = canonicalize("/%7e/../a b")
    with pytest.raises(AttributeError):
        r.url = "x"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(r)) == r
    error = InvalidTarget("encode-unsafe", "path", 2, "no")
    again = pickle.loads(pickle.dumps(error))
    assert (again.rule, again.component, again.offset) == ("encode-unsafe", "path", 2)


# --- Input types.


def test_bytes_input() -> None:
    assert canonicalize(b"/caf\xe9").url == "/caf%E9"  # a raw byte stays that byte
    assert canonicalize(b"/caf\xc3\xa9").url == "/caf%C3%A9"
    assert canonicalize(bytearray(b"/a b")).url == "/a%20b"
    assert canonicalize(memoryview(b"/a b")).url == "/a%20b"


def test_surrogates_stand_for_raw_bytes() -> None:
    assert canonicalize("/caf\udce9").url == "/caf%E9"
    assert canonicalize("/\udcc3\udca9").url == "/%C3%A9"


def test_unknown_form() -> None:
    with pytest.raises(ValueError, match="unknown form"):
        canonicalize("/", form="bogus")


# --- Request-target forms (RFC 9112 §3.2) and relative references, each kept in its form.

FORMS = [
    ("auto", "/p?q", "/p?q"),
    ("auto", "/a/../b?x=%7e", "/b?x=~"),
    ("auto", "http://H/p", "http://h/p"),
    ("auto", "*", "*"),
    ("auto", "[::1]:443", "[::1]:443"),
    ("auto", "127.0.0.1:8080", "127.0.0.1:8080"),
    ("auto", "//H/p", "//h/p"),
    ("auto", "g;x?y#s", "g;x?y#s"),
    ("auto", "?q", "?q"),
    ("auto", "#f", "#f"),
    ("auto", "", ""),
    # dot removal made "//y": "/." keeps it a path when the result is read in auto form
    ("origin", "//x/../y", "/.//y"),
    ("origin", "//x", "//x"),
    ("origin", "/a:b", "/a:b"),
    ("origin", "", "/"),
    ("origin", "?q", "/?q"),
    ("authority", "Example.COM:443", "example.com:443"),
    ("authority", "h:", "h:"),
    ("authority", "[::1]:80", "[::1]:80"),
    ("asterisk", "*", "*"),
    ("absolute", "HTTP://h", "http://h/"),
    ("reference", "a b", "a%20b"),
]


@pytest.mark.parametrize(("form", "target", "expected"), FORMS)
def test_forms(form: str, target: str, expected: str) -> None:
    assert canonicalize(target, form=form).url == expected
    assert canonicalize(expected, form=form).url == expected


def test_asterisk_form_is_left_alone() -> None:
    assert canonicalize("*", Policy.profile("strict")).url == "*"


# --- Strict.


@pytest.mark.parametrize(
    ("target", "rule", "component", "offset"),
    [
        ("/a b", "encode-unsafe", "path", 2),
        ("/?q=a b", "encode-unsafe", "query", 5),
        ("/#a b", "encode-unsafe", "fragment", 3),
        ("/a%zz", "encode-stray-percent", "path", 2),
        ("/caf\u00e9", "encode-non-ascii", "path", 4),
        ("/caf\udce9", "encode-non-ascii", "path", 4),
        ("http://b\u00fccher.de/", "idna-host", "host", 7),
        ("http://u s@h/", "encode-unsafe", "userinfo", 8),
        ("http://h[/", "encode-unsafe", "host", 8),
    ],
)
def test_strict_names_rule_component_offset(
    target: str, rule: str, component: str, offset: int
) -> None:
    with pytest.raises(InvalidTarget) as info:
        canonicalize(target, Policy.profile("strict"))
    error = info.value
    assert (error.rule, error.component, error.offset) == (rule, component, offset)
    assert error.status_hint == 400
    assert rule in str(error)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        # Normalizations of valid URIs are not repairs: strict still applies them.
        ("HTTP://Example.COM:80/%7e/./a/../b%2f", "http://example.com/~/b%2F"),
        ("/a%2541", "/a%2541"),
        ("http://h", "http://h/"),
    ],
)
def test_strict_normalizes_valid_input(target: str, expected: str) -> None:
    assert canonicalize(target, Policy.profile("strict")).url == expected


# --- Edits and their offsets.


def test_edit_offsets_count_in_the_decoded_input() -> None:
    r = canonicalize(b"/\xff a")
    assert r.url == "/%FF%20a"
    assert [(e.rule, e.start, e.end, e.before) for e in r.edits] == [
        ("encode-non-ascii", 1, 2, "\udcff"),
        ("encode-unsafe", 2, 3, " "),
    ]


def test_adjacent_edits_of_one_rule_merge() -> None:
    r = canonicalize("/%7e%7E%41x%61")
    assert [(e.rule, e.start, e.end, e.before, e.after) for e in r.edits] == [
        ("decode-unreserved", 1, 10, "%7e%7E%41", "~~A"),
        ("decode-unreserved", 11, 14, "%61", "a"),
    ]


def test_edits_empty_exactly_when_unchanged() -> None:
    # Rules whose net effect is nothing must not leave an edit behind.
    for target in ["./a:b", "http:/.//a", "../a", "./", "/%2541", "http://h/"]:
        r = canonicalize(target)
        assert r.url == target
        assert r.edits == (), r


# --- Large inputs: linear work, correct answers (timing lives in bench/).

MB = 1_000_000


def test_a_million_stray_percents() -> None:
    r = canonicalize("/" + "%" * MB)
    assert r.url == "/" + "%25" * MB
    assert len(r.edits) == 1


def test_a_million_dot_dot_slashes() -> None:
    r = canonicalize("/" + "../" * (MB // 3) + "a")
    assert r.url == "/a"


def test_a_million_escapes() -> None:
    r = canonicalize("/" + "%41" * (MB // 3))
    assert r.url == "/" + "A" * (MB // 3)


def test_many_encoded_dot_dots() -> None:
    # One decode-unreserved edit per "%2e%2E" until the path holds FOLD_AFTER edits; the rest
    # fold into the last one (issue #13).  100 KB keeps this quick (bench/ has the rest).
    target = "/a" + "/%2e%2E" * (MB // 70)
    r = canonicalize(target)
    assert r.url == "/"
    *chars, dots = r.edits
    assert len(chars) == FOLD_AFTER
    assert {e.rule for e in chars} == {"decode-unreserved"}
    assert dots.rule == "remove-dot-segments"
    folded = chars[-1]
    assert (folded.start, folded.end) == (3 + 7 * (FOLD_AFTER - 1), len(target))
    assert folded.before == target[folded.start :]
    assert folded.after == folded.before.replace("%2e%2E", "..")


def test_a_million_query_pairs_sorted() -> None:
    pairs = [f"k{i % 1000:03d}={i}" for i in range(MB // 10)]
    policy = Policy().with_rules("+sort-query")
    r = canonicalize("/?" + "&".join(reversed(pairs)), policy)
    assert r.url.startswith("/?k000=")
    assert len(r.url) == len("/?" + "&".join(pairs))


def test_a_million_surrogates() -> None:
    r = canonicalize(b"/" + b"\xff" * MB)
    assert r.url == "/" + "%FF" * MB


def test_a_long_refused_fast_path_target() -> None:
    # Regression: with merge-slashes the fast-path pattern backtracked 2^n ways on "/aaa…a%".
    policy = Policy().with_rules("+merge-slashes")
    r = canonicalize("/" + "a" * MB + "%", policy, form="origin")
    assert r.url == "/" + "a" * MB + "%25"


# Issue #14: rewriting never makes a target read as something else.
@pytest.mark.parametrize(
    ("target", "rules", "url"),
    [
        # A "//" made by decoding or by backslash-as-slash would be a network-path reference to
        # another host: it gets the "/." guard, and the result is a fixed point.
        ("/%2Fevil.example/x", "+decode-escaped-slash", "/.//evil.example/x"),
        ("/%2fa", "+decode-escaped-slash", "/.//a"),
        ("/\\a", "+backslash-as-slash", "/.//a"),
        ("/\\\\evil.example/x", "+backslash-as-slash", "/.///evil.example/x"),
        # "auto" takes only hosts no scheme can start for authority-form: "%41b:1" would
        # canonicalize into the scheme "ab:".
        ("%41b:1", "-lowercase-host", "./Ab:1"),
        ("%41b:1", "", "./Ab:1"),
        ("\u00c0b:1", "", "./%C3%80b:1"),
        ("1%41:80", "", "1a:80"),
    ],
)
def test_rewrites_keep_the_reading(target: str, rules: str, url: str) -> None:
    policy = Policy().with_rules(rules) if rules else Policy()
    result = canonicalize(target, policy)
    assert result.url == url
    again = canonicalize(result.url, policy)
    assert (again.url, again.edits) == (url, ())


def test_wrong_types_are_type_errors_and_profiles_are_names() -> None:
    for bad in (123, None, 1.5, ["/a"]):
        with pytest.raises(TypeError, match="str or bytes"):
            canonicalize(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Policy or a profile name"):
        canonicalize("/a", policy=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown profile"):
        canonicalize("/a", policy="crawlr")
    url = "http://h/a?utm_source=x&b=1#f"
    assert canonicalize(url, policy="crawler") == canonicalize(url, Policy.profile("crawler"))
    assert canonicalize(bytearray(b"/%7e")).url == "/~"
