"""`split`: RFC 3986 Appendix B and the request-target forms of RFC 9112 §3.2, before decoding."""

from __future__ import annotations

import pytest

from urlsan.core.split import FORMS, split, split_authority

# (target, form, scheme, userinfo, host, port, path, query, fragment); None: absent.
AUTO = [
    ("*", "asterisk", None, None, None, None, "*", None, None),
    ("/", "origin", None, None, None, None, "/", None, None),
    ("/a?b#c", "origin", None, None, None, None, "/a", "b", "c"),
    ("/a?b?c", "origin", None, None, None, None, "/a", "b?c", None),
    ("/a%3Fb", "origin", None, None, None, None, "/a%3Fb", None, None),
    ("/a@b:c", "origin", None, None, None, None, "/a@b:c", None, None),
    ("http://h/p?q#f", "absolute", "http", None, "h", None, "/p", "q", "f"),
    ("HTTP://u:p@H:8080", "absolute", "HTTP", "u:p", "H", "8080", "", None, None),
    ("http://a@b@c/", "absolute", "http", "a@b", "c", None, "/", None, None),
    ("http://h:/", "absolute", "http", None, "h", "", "/", None, None),
    ("http://h:x/", "absolute", "http", None, "h:x", None, "/", None, None),
    ("http://[::1]:443/", "absolute", "http", None, "[::1]", "443", "/", None, None),
    ("http://[::1]/", "absolute", "http", None, "[::1]", None, "/", None, None),
    ("http:g", "absolute", "http", None, None, None, "g", None, None),
    ("mailto:a@b", "absolute", "mailto", None, None, None, "a@b", None, None),
    ("urn:a:b", "absolute", "urn", None, None, None, "a:b", None, None),
    ("//h/p", "reference", None, None, "h", None, "/p", None, None),
    ("//", "reference", None, None, "", None, "", None, None),
    ("g;x?y#s", "reference", None, None, None, None, "g;x", "y", "s"),
    ("", "reference", None, None, None, None, "", None, None),
    ("?q", "reference", None, None, None, None, "", "q", None),
    ("#f", "reference", None, None, None, None, "", None, "f"),
    ("1a:b", "reference", None, None, None, None, "1a:b", None, None),
    # "h:443" could be a scheme and a path: auto reads it so; a proxy says form="authority".
    ("h:443", "absolute", "h", None, None, None, "443", None, None),
    ("127.0.0.1:8080", "authority", None, None, "127.0.0.1", "8080", "", None, None),
    ("[::1]:443", "authority", None, None, "[::1]", "443", "", None, None),
]


@pytest.mark.parametrize(
    ("target", "form", "scheme", "userinfo", "host", "port", "path", "query", "fragment"), AUTO
)
def test_split_auto(
    target: str,
    form: str,
    scheme: str | None,
    userinfo: str | None,
    host: str | None,
    port: str | None,
    path: str,
    query: str | None,
    fragment: str | None,
) -> None:
    parts = split(target)
    assert parts.form == form
    texts = [
        span[0]
        for span in (
            parts.scheme,
            parts.userinfo,
            parts.host,
            parts.port,
            parts.path,
            parts.query,
            parts.fragment,
        )
    ]
    assert texts == [scheme, userinfo, host, port, path, query, fragment]


@pytest.mark.parametrize("target", [case[0] for case in AUTO])
def test_offsets_point_into_the_input(target: str) -> None:
    parts = split(target)
    for text, start in parts[1:]:
        if text is not None:
            assert target[start : start + len(text)] == text


def test_origin_form_reads_double_slash_as_path() -> None:
    # RFC 9112 §3.2.1: an origin-form target has no authority; "//x" is a path.
    parts = split("//x/y?q", "origin")
    assert parts.form == "origin"
    assert parts.host[0] is None
    assert parts.path[0] == "//x/y"
    assert parts.query[0] == "q"


def test_origin_form_reads_a_colon_as_path() -> None:
    parts = split("/a:b", "origin")
    assert parts.scheme[0] is None
    assert parts.path[0] == "/a:b"


def test_authority_form_when_told() -> None:
    # RFC 9112 §3.2.3: CONNECT's target is host ":" port, even when the host looks like a scheme.
    parts = split("example.com:443", "authority")
    assert (parts.form, parts.host[0], parts.port[0]) == ("authority", "example.com", "443")
    assert parts.scheme[0] is None


def test_asterisk_when_told() -> None:
    assert split("*", "asterisk").form == "asterisk"


def test_nothing_is_decoded_before_splitting() -> None:
    # RFC 3986 §2.4: "%2F", "%3F" and "%23" are data, not delimiters.
    parts = split("http://h/a%2Fb%3Fc%23d?e%26f")
    assert parts.path[0] == "/a%2Fb%3Fc%23d"
    assert parts.query[0] == "e%26f"
    assert parts.fragment[0] is None


@pytest.mark.parametrize(
    ("authority", "userinfo", "host", "port"),
    [
        ("h", None, "h", None),
        ("h:80", None, "h", "80"),
        ("h:", None, "h", ""),
        ("u@h:80", "u", "h", "80"),
        ("u:p@h", "u:p", "h", None),
        ("a@b@h", "a@b", "h", None),
        ("[::1]", None, "[::1]", None),
        ("[::1]:8", None, "[::1]", "8"),
        ("h:8x", None, "h:8x", None),
        ("h:\u0661", None, "h:\u0661", None),  # a non-ASCII digit is not a port (§3.2.3 DIGIT)
    ],
)
def test_split_authority(authority: str, userinfo: str | None, host: str, port: str | None) -> None:
    u, h, p = split_authority(authority, 10)
    assert (u[0], h[0], p[0]) == (userinfo, host, port)
    for text, start in (u, h, p):
        if text is not None:
            assert authority[start - 10 : start - 10 + len(text)] == text


def test_forms_listed() -> None:
    assert set(FORMS) == {"auto", "origin", "absolute", "authority", "asterisk", "reference"}
