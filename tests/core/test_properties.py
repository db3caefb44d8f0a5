"""Invariants of `canonicalize` over arbitrary text and over URL-shaped text.

- never raises outside strict; the output is ASCII and an RFC 3986 URI-reference (abnf.py);
- idempotent: the output canonicalizes to itself with no edits, in the same form;
- the default profile keeps the meaning a server sees (meaning.py);
- ``edits`` is empty exactly when nothing changed, and character edits point into the input;
- many rewrites in a component fold into at most FOLD_AFTER + 1 edits that keep those invariants.
"""

from __future__ import annotations

import re

import pytest
from abnf import AUTHORITY_FORM, URI_REFERENCE
from hypothesis import assume, example, given
from hypothesis import strategies as st
from meaning import server_view

from urlsan.core import RULES, InvalidTarget, Policy, canonicalize
from urlsan.core.result import FOLD_AFTER, Edit
from urlsan.core.split import split


def detect_form(target: str) -> str:
    return split(target).form


# Rules whose edits cover exactly the characters they touched (result.Edit's docstring): for
# them ``before == input[start:end]``.  Structural rules show the component as they saw it.
CHARACTER_RULES = frozenset(
    {
        "lowercase-scheme",
        "lowercase-host",
        "idna-host",
        "drop-empty-port",
        "decode-unreserved",
        "uppercase-escape",
        "encode-stray-percent",
        "encode-unsafe",
        "encode-non-ascii",
        "backslash-as-slash",
        "decode-escaped-slash",
    }
)

SURROGATES = st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF)
INTERESTING = "%/.?#&=+:@[]\\ aA~é\udcff0123456789abcdefABCDEFxXuU;"
ANY_CHAR = st.one_of(
    st.sampled_from(INTERESTING),
    st.characters(codec=None),
    SURROGATES,
    st.characters(max_codepoint=127),
)
ANY_TEXT = st.text(ANY_CHAR, max_size=60)

# URL-shaped: components drawn from alphabets rich in delimiters, escapes and dots.
_HEXISH = st.sampled_from(
    ["%41", "%2e", "%2E", "%2f", "%2F", "%25", "%7e", "%zz", "%", "%5C", "%3f"]
)
_PIECE = st.one_of(_HEXISH, st.text(st.sampled_from(INTERESTING), min_size=1, max_size=4))
_SEGMENT = st.one_of(
    st.sampled_from([".", "..", "%2e", "%2E%2e", ".%2E", "..;", ""]),
    st.lists(_PIECE, max_size=4).map("".join),
)
_PATH = st.lists(_SEGMENT, max_size=6).map("/".join)
_SCHEME = st.sampled_from(["http", "HTTP", "https", "HtTpS", "ws", "wss", "foo", "mailto", "urn"])
_HOST = st.one_of(
    st.sampled_from(
        [
            "example.com",
            "Example.COM",
            "EX%41MPLE.com",
            "bücher.ch",
            "[::1]",
            "[FE80::A%25en0]",
            "127.0.0.1",
            "0x7f.1",
            "a b",
            "h%2e",
            "",
            "xn--bcher-kva.ch",
            "\udcff",
        ]
    ),
    st.lists(_PIECE, max_size=3).map("".join),
    # IP-literals with zone IDs of any text: RFC 6874's "%25", a bare "%", escapes, junk
    st.builds(
        "[{}{}{}]".format,
        st.sampled_from(["::1", "FE80::A", "fe80::1:2", "::FFFF:1.2.3.4", "1::", "x::"]),
        st.sampled_from(["%25", "%", "", "%2"]),
        st.lists(_PIECE, max_size=3).map("".join),
    ),
)
_PORT = st.sampled_from(["", ":", ":80", ":443", ":0080", ":8080", ":00"])
_USERINFO = st.sampled_from(["", "user@", "u:p@", "%41:%7e@"])
_QUERY = st.one_of(
    st.none(), st.lists(_PIECE, max_size=6).map("".join), st.just("q=a+b&q=a%2Bb&x=%26")
)
_FRAGMENT = st.one_of(st.none(), st.lists(_PIECE, max_size=3).map("".join))


@st.composite
def url_shaped(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["absolute", "network", "origin", "relative", "opaque"]))
    path = draw(_PATH)
    if kind == "absolute":
        head = f"{draw(_SCHEME)}://{draw(_USERINFO)}{draw(_HOST)}{draw(_PORT)}"
        path = "/" + path if path and draw(st.booleans()) else path
        if path and not path.startswith("/"):
            path = "/" + path
    elif kind == "network":
        head = f"//{draw(_USERINFO)}{draw(_HOST)}{draw(_PORT)}"
        if path and not path.startswith("/"):
            path = "/" + path
    elif kind == "origin":
        head, path = "", "/" + path.lstrip("/")
    elif kind == "opaque":
        head = draw(_SCHEME) + ":"
    else:
        head = ""
    query = draw(_QUERY)
    fragment = draw(_FRAGMENT)
    return (
        head
        + path
        + ("" if query is None else "?" + query)
        + ("" if fragment is None else "#" + fragment)
    )


TARGETS = st.one_of(ANY_TEXT, url_shaped())

PROFILES = [Policy.profile(name) for name in ("rfc3986", "rfc2396", "crawler")]
ALL_LOSSY = Policy().with_rules(
    "+merge-slashes,+sort-query,+drop-empty-query,+drop-params,+decode-escaped-slash,"
    "+backslash-as-slash,+strip-host-dot,+numeric-host,+strip-fragment"
)
POLICIES = [*PROFILES, ALL_LOSSY]
POLICY_IDS = ["rfc3986", "rfc2396", "crawler", "all-lossy"]


def is_valid_output(url: str, form: str) -> bool:
    if not url.isascii():
        return False
    if form == "authority":
        return AUTHORITY_FORM.fullmatch(url) is not None
    return url == "*" or URI_REFERENCE.fullmatch(url) is not None


@pytest.mark.parametrize("policy", POLICIES, ids=POLICY_IDS)
@given(target=TARGETS)
@example(target="HTTP://Example.COM:80/%7euser/./a/../b%2fc?q=%41 b")
@example(target="/%%36%36")
@example(target="\udcff\udcc0\udc80")
@example(target="a:b/../c:d")
@example(target="//")
@example(target="http://[v1.x]/")
def test_output_is_an_ascii_uri_reference_and_idempotent(policy: Policy, target: str) -> None:
    result = canonicalize(target, policy)
    form = detect_form(target)
    assert is_valid_output(result.url, form), result
    # Authority-form is told apart from a scheme by shape alone ("[::1]:80", "é:80"); once the
    # host is an A-label ("xn--9ca:80") only the caller's form="authority" can say so.
    again = canonicalize(result.url, policy, form="authority" if form == "authority" else "auto")
    assert again.url == result.url, (result, again)
    assert again.edits == (), again
    slash_rules = policy.enabled("backslash-as-slash") or policy.enabled("decode-escaped-slash")
    if not slash_rules and (form != "authority" or target.isascii()):
        assert detect_form(result.url) == form  # (WHATWG's "\\a" is "/a": reference -> origin)


@given(target=TARGETS)
@example(target="/a%2Fb")
@example(target="/?q=a+b&r=a%2Bb")
@example(target="a/..")
@example(target="../../a:b")
@example(target="http://h/%2e%2e/%2E/a/.%2e/b")
@example(target="\u00c0:")
def test_default_profile_keeps_what_a_server_sees(target: str) -> None:
    result = canonicalize(target)
    form = detect_form(target)
    form = form if form in ("origin", "authority") else "auto"
    assert server_view(result.url, form) == server_view(target, form), result


@given(target=TARGETS)
def test_origin_form_keeps_what_a_server_sees(target: str) -> None:
    result = canonicalize(target, form="origin")
    assert server_view(result.url, "origin") == server_view(target, "origin"), result
    assert result.url.startswith("/")
    assert canonicalize(result.url, form="origin").url == result.url


@pytest.mark.parametrize("policy", POLICIES, ids=POLICY_IDS)
@given(target=TARGETS)
def test_edits_describe_the_rewrite(policy: Policy, target: str) -> None:
    result = canonicalize(target, policy)
    assert (result.edits == ()) == (result.url == target), result
    assert result.changed == (result.url != target)
    for edit in result.edits:
        assert 0 <= edit.start <= edit.end <= len(target), edit
        assert edit.before != edit.after, edit
        if set(edit.rules) <= CHARACTER_RULES:
            assert target[edit.start : edit.end] == edit.before, (edit, target)
    for finding in result.findings:
        assert 0 <= finding.offset <= len(target), finding


@given(target=TARGETS, form=st.sampled_from(["origin", "absolute", "authority", "reference"]))
@example(target="z\u01bd.\x03", form="authority")
def test_edits_point_into_the_input_in_every_form(target: str, form: str) -> None:
    result = canonicalize(target, form=form)
    assert result.url.isascii()
    assert (result.edits == ()) == (result.url == target)
    for edit in result.edits:
        assert 0 <= edit.start <= edit.end <= len(target), edit
        if set(edit.rules) <= CHARACTER_RULES:
            assert target[edit.start : edit.end] == edit.before, (edit, target)
    again = canonicalize(result.url, form=form)
    assert again.url == result.url
    assert again.edits == ()


@given(target=TARGETS)
@example(target="/a\\b")
def test_output_passes_the_policy_that_made_it(target: str) -> None:
    # A rejecting rule must not produce what it rejects.
    policy = Policy().with_rules("+reject-escaped-slash")
    try:
        result = canonicalize(target, policy)
    except InvalidTarget as e:
        assert e.rule == "reject-escaped-slash"
        return
    assert canonicalize(result.url, policy).url == result.url


@given(target=TARGETS)
def test_bytes_input_means_its_surrogateescape_text(target: str) -> None:
    try:
        data = target.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        assume(False)  # a lone surrogate outside U+DC80-U+DCFF stands for no byte
        return
    assert canonicalize(data) == canonicalize(data.decode("utf-8", "surrogateescape"))


@given(target=TARGETS)
@example(target="1a:b")
@example(target="http://h:x/")
def test_strict_raises_exactly_when_the_input_is_not_valid(target: str) -> None:
    strict = Policy.profile("strict")
    valid = is_valid_output(target, detect_form(target))
    try:
        result = canonicalize(target, strict)
    except InvalidTarget as e:
        assert not valid, e
        assert 0 <= e.offset <= len(target)
        assert e.status_hint == 400
        assert canonicalize(target).changed  # the default profile repairs it
        return
    assert valid, result
    assert result.url == canonicalize(target).url  # strict normalizes like the default


# --- RFC 3986 §6.2.2-6.2.3: equivalent spellings get one form; different meanings stay apart.

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _respell(text: str, flips: list[bool]) -> str:
    """Escape some unreserved characters (§6.2.2.2) and lowercase some escapes' hex (§6.2.2.1)."""
    out = []
    for i, m in enumerate(re.finditer(r"%[0-9A-F]{2}|.", text, re.DOTALL)):
        token = m.group()
        if not flips[i % len(flips)]:
            out.append(token)
        elif len(token) == 3:
            out.append(token.lower())
        elif token in _UNRESERVED:
            out.append(f"%{ord(token):02x}" if i % 2 else f"%{ord(token):02X}")
        else:
            out.append(token)
    return "".join(out)


def _flip_case(text: str, flips: list[bool]) -> str:
    return "".join(
        c.swapcase() if c.isascii() and flips and flips[i % len(flips)] else c
        for i, c in enumerate(text)
    )


@given(target=url_shaped(), flips=st.lists(st.booleans(), min_size=1, max_size=16), data=st.data())
def test_equivalent_spellings_get_one_form(
    target: str, flips: list[bool], data: st.DataObject
) -> None:
    canonical = canonicalize(target).url
    parts = split(canonical)
    if parts.form in ("asterisk", "authority"):
        return
    (scheme, _), (userinfo, _), (host, _), (port, _) = parts[1:5]
    (path, _), (query, _), (fragment, _) = parts[5:8]
    variant = ""
    if scheme is not None:
        variant += _flip_case(scheme, flips) + ":"
    if host is not None:
        variant += "//"
        if userinfo is not None:
            variant += _respell(userinfo, flips) + "@"
        if host[:1] == "[":
            # The address is case-insensitive; a zone ID names an interface, whose case counts.
            address, percent, zone = host.partition("%25")
            variant += _flip_case(address, flips) + percent + _respell(zone, flips)
        else:
            variant += _respell(host, flips[::-1])
        if port is not None:
            variant += ":" + "0" * data.draw(st.integers(0, 2)) + port
        elif scheme in ("http", "https", "ws", "wss"):
            default = {"http": "80", "https": "443", "ws": "80", "wss": "443"}[scheme]
            variant += data.draw(st.sampled_from(["", ":", ":" + default, ":0" + default]))
    path = path or ""
    dots = ""
    if path[:1] == "/" and data.draw(st.booleans()):
        dots = data.draw(st.sampled_from(["/.", "/x/..", "/%2e", "/X/%2E%2e"]))  # §6.2.2.3
    variant += dots + _respell(path, flips)
    if query is not None:
        variant += "?" + _respell(query, flips)
    if fragment is not None:
        variant += "#" + _respell(fragment, flips)
    assert canonicalize(variant, form=parts.form).url == canonical, variant


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("/a%2Fb", "/a/b"),  # §2.2: an escaped delimiter is data
        ("/?q=a+b", "/?q=a%2Bb"),  # "+" is a sub-delim, not a space
        ("/?q=a+b", "/?q=a%20b"),
        ("/?a=1&b=2", "/?a=1%26b=2"),
        ("/?a=b", "/?a%3Db"),
        ("/a;b", "/a%3Bb"),
        ("/%2541", "/%41"),
        ("/a?", "/a"),  # §6.2.3: an empty query is not no query
        ("/a#", "/a"),
        ("/A", "/a"),  # path case is kept
        ("/a/", "/a"),
        ("/a//b", "/a/b"),
        ("/?b&a", "/?a&b"),
        ("http://u@h/", "http://h/"),
        ("http://h:8080/", "http://h/"),
        ("https://h:80/", "https://h/"),
        ("http://h./", "http://h/"),
        ("/%21", "/!"),  # RFC 3986 §2.2: "!" is a sub-delim, its escape is kept
        ("/a\\b", "/a/b"),
    ],
)
def test_different_meanings_stay_distinct(a: str, b: str) -> None:
    assert canonicalize(a).url != canonicalize(b).url


# --- The fold (issue #13): components with many rewrites, of alternating rules or apart.

_RANK = {rule.name: i for i, rule in enumerate(RULES)}
_COMPONENT_ORDER = ("scheme", "userinfo", "host", "port", "path", "query", "fragment")
# Units that each make a rewrite (or none, "a"), in every component they can stand in.
_REWRITE = st.sampled_from(
    ["%", "\x01", "%41", "%7e", "%3c", "é", "%zz", "\udcff", " ", "a", "%00", "%0d", "A", "<"]
)
_SLASHES = st.sampled_from(["\\", "%2F", "%2f", "%5c"])


def _body(draw: st.DrawFn, extra: st.SearchStrategy[str] = _REWRITE) -> str:
    """A short pattern of units repeated until it makes up to 3 * FOLD_AFTER rewrites, with a
    few units after it (generating one long list is slow)."""
    pattern = "".join(draw(st.lists(st.one_of(_REWRITE, extra), min_size=1, max_size=6)))
    tail = "".join(draw(st.lists(_REWRITE, max_size=4)))
    return pattern * draw(st.integers(FOLD_AFTER // 6, 3 * FOLD_AFTER)) + tail


@st.composite
def many_rewrites(draw: st.DrawFn) -> str:
    """A target with up to 3 * FOLD_AFTER rewrites in some of its components."""
    body = {c: _body(draw) if draw(st.booleans()) else "" for c in _COMPONENT_ORDER}
    path = "/x" + (_body(draw, _SLASHES) if draw(st.booleans()) else "")  # "/x": no "//", "/."
    tail = f"{path}?{body['query']}#{body['fragment']}"
    if draw(st.booleans()):
        return tail
    return f"http://{body['userinfo']}@{body['host'] or 'h'}{tail}"


def _passes(edits: list[Edit]) -> list[list[Edit]]:
    """A component's character edits, cut where one starts before the last ended: the passes
    over it (host: lowercase-host, then the characters; path: backslash-as-slash, then them)."""
    passes: list[list[Edit]] = []
    for edit in edits:
        if passes and edit.start >= passes[-1][-1].end:
            passes[-1].append(edit)
        else:
            passes.append([edit])
    return passes


def _apply(text: str, start: int, passes: list[list[Edit]]) -> str:
    for edits in passes:  # a pass before the last keeps the length: the offsets hold
        out, pos = [], start
        for edit in edits:
            out += (text[pos - start : edit.start - start], edit.after)
            pos = edit.end
        out.append(text[pos - start :])
        text = "".join(out)
    return text


def _spans(target: str, form: str) -> dict[str, tuple[str | None, int]]:
    parts = split(target, form)
    return dict(zip(_COMPONENT_ORDER, parts[1:], strict=True))


@pytest.mark.parametrize("policy", POLICIES, ids=POLICY_IDS)
@given(target=many_rewrites())
@example(target="/x" + "\x01%" * (2 * FOLD_AFTER))
@example(target="http://" + "A%" * (2 * FOLD_AFTER) + "/x")
@example(target="/x" + "\\%" * (2 * FOLD_AFTER))
def test_many_rewrites_fold_and_keep_the_invariants(policy: Policy, target: str) -> None:
    result = canonicalize(target, policy)
    form = detect_form(target)
    ranks = [_COMPONENT_ORDER.index(e.component) for e in result.edits]
    assert ranks == sorted(ranks), result.edits
    for edit in result.edits:
        assert all(rule in _RANK for rule in edit.rules), edit
        assert "+".join(sorted(set(edit.rules), key=_RANK.__getitem__)) == edit.rule, edit
        if len(edit.rules) > 1:
            assert set(edit.rules) <= CHARACTER_RULES, edit
    before, after = _spans(target, form), _spans(result.url, form)
    for component in _COMPONENT_ORDER:
        edits = [e for e in result.edits if e.component == component]
        chars = [e for e in edits if set(e.rules) <= CHARACTER_RULES]
        assert len(chars) <= FOLD_AFTER + 1, (component, len(chars))
        if any(len(e.rules) > 1 for e in chars):  # folded only past FOLD_AFTER (`edit_rules`)
            assert len(chars) >= FOLD_AFTER, (component, len(chars))
        for edit in chars:
            assert target[edit.start : edit.end] == edit.before, edit
        passes = _passes(chars)
        assert len(passes) <= 2, passes  # in order, within each pass over the component
        text, start = before[component]
        if edits == chars and text is not None:  # character edits alone: they make the output
            assert _apply(text, start, passes) == after[component][0], component
    again = canonicalize(result.url, policy)
    assert again.url == result.url, (result, again)
    assert again.edits == ()
