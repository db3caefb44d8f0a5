"""One table per rule, run through `canonicalize` (and the rule functions where they are public).

The character tables cover every byte 0x00-0xFF, raw and escaped, in path, query and fragment
position; the expectations come from RFC 3986 Appendix A, restated here as plain sets.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urlsan.core import RULES, InvalidTarget, Policy, Result, canonicalize, rules
from urlsan.core.driver import canonicalize_python
from urlsan.core.pipeline import Example
from urlsan.core.result import FOLD_AFTER, rule_names

UNRESERVED = set(string.ascii_letters + string.digits + "-._~")  # §2.3
SUB_DELIMS = set("!$&'()*+,;=")  # §2.2
PCHAR = UNRESERVED | SUB_DELIMS | set(":@")  # §3.3
ALLOWED = {"path": PCHAR | {"/"}, "query": PCHAR | set("/?"), "fragment": PCHAR | set("/?")}
# Where a byte sits, between "x" and "y" so no dot segment or escape forms by accident.
POSITION = {"path": ("/x", "y"), "query": ("/?x", "y"), "fragment": ("/#x", "y")}
# Characters that end the component they would be in.
DELIMITER = {"path": set("?#"), "query": {"#"}, "fragment": set()}


def url(component: str, middle: str) -> str:
    head, tail = POSITION[component]
    return head + middle + tail


def ids(value: object) -> str:
    return f"{value:02X}" if isinstance(value, int) else str(value)


# --- Every byte, raw (as bytes input: >= 0x80 arrives as a surrogate) and escaped.


@pytest.mark.parametrize("component", ["path", "query", "fragment"])
@pytest.mark.parametrize("byte", range(256), ids=ids)
def test_every_raw_byte(component: str, byte: int) -> None:
    char = chr(byte)
    if char in DELIMITER[component] or char == "%":
        return  # delimiters and "%" have their own tests
    head, tail = POSITION[component]
    result = canonicalize(head.encode() + bytes([byte]) + tail.encode())
    # Not allowed: controls, space, '"<>\\^`{|}[]', DEL and every byte >= 0x80.
    expected = char if char in ALLOWED[component] else f"%{byte:02X}"
    assert result.url == url(component, expected)
    assert result.changed == (expected != char)


@pytest.mark.parametrize("component", ["path", "query", "fragment"])
@pytest.mark.parametrize("byte", range(256), ids=ids)
@pytest.mark.parametrize("case", ["upper", "lower"])
def test_every_escaped_byte(component: str, byte: int, case: str) -> None:
    escape = f"%{byte:02X}" if case == "upper" else f"%{byte:02x}"
    result = canonicalize(url(component, escape))
    # §6.2.2.2: unreserved octets are decoded; §6.2.2.1: all other escapes use uppercase hex.
    expected = chr(byte) if chr(byte) in UNRESERVED else f"%{byte:02X}"
    assert result.url == url(component, expected)
    rule = {True: "decode-unreserved", False: "uppercase-escape"}[chr(byte) in UNRESERVED]
    if result.changed:
        assert [e.rule for e in result.edits] == [rule]


@pytest.mark.parametrize("component", ["path", "query", "fragment"])
@pytest.mark.parametrize(
    "char", [chr(c) for c in [*range(0x20), 0x7F]], ids=lambda c: f"{ord(c):02X}"
)
def test_every_control_character_is_encoded(component: str, char: str) -> None:
    result = canonicalize(url(component, char))
    assert result.url == url(component, f"%{ord(char):02X}")
    [edit] = result.edits
    assert (edit.rule, edit.component, edit.before) == ("encode-unsafe", component, char)


@pytest.mark.parametrize(
    "char", [chr(c) for c in [*range(0x21), 0x7F]], ids=lambda c: f"{ord(c):02X}"
)
def test_controls_and_space_in_host_and_userinfo(char: str) -> None:
    assert (
        canonicalize(f"http://u{char}@h{char}x/").url
        == f"http://u%{ord(char):02X}@h%{ord(char):02X}x/"
    )


# --- Character rules, by example.

CHARACTERS = [
    # decode-unreserved (§2.3, §6.2.2.2), in every component
    ("/%7euser", "/~user"),
    ("/%41%5A%61%7A%30%39%2D%2E%5F%7E", "/AZaz09-._~"),
    ("/?%41=%42#%43", "/?A=B#C"),
    ("http://%75%73%65%72@h/", "http://user@h/"),
    # uppercase-escape (§2.1, §6.2.2.1)
    ("/%2f%3f%23%26%3d%2b%25%3b", "/%2F%3F%23%26%3D%2B%25%3B"),
    ("/%c3%a9", "/%C3%A9"),
    # reserved escapes are never decoded (§2.2)
    ("/%2F%3F%23%26%3D%2B%25%3B%21%2A%27%28%29", "/%2F%3F%23%26%3D%2B%25%3B%21%2A%27%28%29"),
    ("/?q=a%26b%3Dc", "/?q=a%26b%3Dc"),
    # decoding happens exactly once
    ("/%2541", "/%2541"),
    ("/%%36%36", "/%2566"),
    ("/a%41b%zz", "/aAb%25zz"),
    ("/%252e%252e", "/%252e%252e"),
    # encode-stray-percent (§2.4)
    ("/%", "/%25"),
    ("/%%", "/%25%25"),
    ("/%4", "/%254"),
    ("/%g1", "/%25g1"),
    ("/?%", "/?%25"),
    ("/#%", "/#%25"),
    ("/%u0041", "/%25u0041"),
    # encode-unsafe: space, '"<>', '{}|\\^`', '[]' outside an IP-literal
    ("/a b", "/a%20b"),
    ('/"<>', "/%22%3C%3E"),
    ("/{}|\\^`", "/%7B%7D%7C%5C%5E%60"),
    ("/[a]", "/%5Ba%5D"),
    ("/?[a]", "/?%5Ba%5D"),
    ("/#[a]#", "/#%5Ba%5D%23"),
    # encode-non-ascii (§2.5): UTF-8; a surrogate is its raw byte
    ("/é", "/%C3%A9"),
    ("/\u2603", "/%E2%98%83"),
    ("/\U0001f600", "/%F0%9F%98%80"),
    ("/\udcff\udc80", "/%FF%80"),
    ("/?q=é#é", "/?q=%C3%A9#%C3%A9"),
    # never touched: '+', sub-delims, ':' and '@' in the path, '?' and '/' in query and fragment
    ("/a+b?q=a+b", "/a+b?q=a+b"),
    ("/!$&'()*+,;=:@", "/!$&'()*+,;=:@"),
    ("/?/?:@#/?:@", "/?/?:@#/?:@"),
    # path case is kept
    ("/A/b/C", "/A/b/C"),
]


@pytest.mark.parametrize(("target", "expected"), CHARACTERS)
def test_character_rules(target: str, expected: str) -> None:
    assert canonicalize(target).url == expected


def test_rfc2396_marks_are_unreserved() -> None:
    # RFC 2396 §2.3: mark = "-" | "_" | "." | "!" | "~" | "*" | "'" | "(" | ")"
    policy = Policy.profile("rfc2396")
    assert canonicalize("/%21%2A%27%28%29%7E", policy).url == "/!*'()~"
    assert canonicalize("/%2F%3B%24", policy).url == "/%2F%3B%24"
    # RFC 3986 §2.2: they are sub-delims there, so the escape is kept (uppercased).
    assert canonicalize("/%21%2a%27%28%29").url == "/%21%2A%27%28%29"


@pytest.mark.parametrize(
    ("char", "expected"),
    [("a", "%61"), ("é", "%C3%A9"), ("\udcff", "%FF"), ("\ud800", "%ED%A0%80"), ("\x00", "%00")],
)
def test_encode_char(char: str, expected: str) -> None:
    assert rules.encode_char(char) == expected


# --- Scheme and host.

SCHEME_AND_HOST = [
    ("HTTP://h/", "http://h/"),
    ("hTtP+X-1.y://h/", "http+x-1.y://h/"),
    ("http://Example.COM/", "http://example.com/"),
    ("http://EX%41MPLE.com/", "http://example.com/"),
    ("http://ex%2Fample/", "http://ex%2Fample/"),
    ("http://h%c3%a9/", "http://h%C3%A9/"),
    ("http://[FE80::1]/", "http://[fe80::1]/"),
    ("http://[::FFFF:1.2.3.4]/", "http://[::ffff:1.2.3.4]/"),
    ("http://[v7.ABC]/", "http://[v7.abc]/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://[not-ip]/", "http://%5Bnot-ip%5D/"),
    # RFC 6874 zone IDs: the address is lowercased, the zone (an interface name) keeps its case
    ("http://[FE80::A%25Eth0]/", "http://[fe80::a%25Eth0]/"),
    ("http://[fe80::1%25en%30]/", "http://[fe80::1%25en0]/"),
    ("http://[fe80::1%25en%2f]/", "http://[fe80::1%25en%2F]/"),
    # RFC 6874 §4: a bare "%" before the zone ID, as ping prints it, is repaired to "%25"
    ("http://[fe80::1%eth0]/", "http://[fe80::1%25eth0]/"),
    ("http://[fe80::1%en0]:8080/", "http://[fe80::1%25en0]:8080/"),
    # ... but a "%" that starts an escape is that escape: no IP-literal, a reg-name
    ("http://[fe80::1%11]/", "http://%5Bfe80%3A%3A1%11%5D/"),
    # a zone that is no ZoneID makes no IP-literal (regression: "%zz" passed through unescaped)
    ("http://[::1%25a%zz]/", "http://%5B%3A%3A1%25a%25zz%5D/"),
    ("http://[::1%25a b]/", "http://%5B%3A%3A1%25a%20b%5D/"),
    # idna-host (UTS 46): non-ASCII host -> A-label
    ("http://bücher.de/", "http://xn--bcher-kva.de/"),
    ("http://BÜCHER.de/", "http://xn--bcher-kva.de/"),
    ("http://www.bücher.de:8080/", "http://www.xn--bcher-kva.de:8080/"),
    ("http://例え.jp/", "http://xn--r8jz45g.jp/"),
    # not a valid IDN: percent-encoded UTF-8 instead (an invalid-idn finding says so)
    ("http://\u2603.net/", "http://%E2%98%83.net/"),
    ("http://\udcff.net/", "http://%FF.net/"),
    # an IDN whose ASCII labels the character rules would change is escaped whole (regression:
    # the A-label was scanned with the input's offsets, giving edits past the input's end)
    ("http://z\u01bd.\x03/", "http://z%C6%BD.%03/"),
    # userinfo keeps its case
    ("http://UsEr:PaSs@h/", "http://UsEr:PaSs@h/"),
]


@pytest.mark.parametrize(("target", "expected"), SCHEME_AND_HOST)
def test_scheme_and_host(target: str, expected: str) -> None:
    assert canonicalize(target).url == expected


def test_zone_id_edits() -> None:
    r = canonicalize("http://[FE80::1%Eth0]/")
    assert r.url == "http://[fe80::1%25Eth0]/"
    assert [(e.rule, e.start, e.end, e.before, e.after) for e in r.edits] == [
        ("lowercase-host", 8, 10, "FE", "fe"),
        ("encode-stray-percent", 15, 16, "%", "%25"),
    ]
    with pytest.raises(InvalidTarget) as raised:
        canonicalize("http://[fe80::1%eth0]/", Policy.profile("strict"))
    assert (raised.value.rule, raised.value.component, raised.value.offset) == (
        "encode-stray-percent",
        "host",
        15,
    )


def test_idna_host_function() -> None:
    assert rules.idna_host("bücher.de") == "xn--bcher-kva.de"
    assert rules.idna_host("\u2603.net") is None
    assert rules.idna_host("a%C3%A9") is None


# --- Port (§3.2.3, §6.2.3).

PORTS = [
    ("http://h:80/", "http://h/"),
    ("http://h:080/", "http://h/"),
    ("http://h:/", "http://h/"),
    ("https://h:443/", "https://h/"),
    ("https://h:80/", "https://h:80/"),
    ("ws://h:80/", "ws://h/"),
    ("wss://h:0443/", "wss://h/"),
    ("ftp://h:21/", "ftp://h:21/"),
    ("http://h:8080/", "http://h:8080/"),
    ("http://h:000/", "http://h:0/"),
    ("http://h:0/", "http://h:0/"),
    ("foo://h:/", "foo://h/"),
    ("//h:80/", "//h:80/"),  # no scheme, no default port to compare with
    ("HTTP://[::1]:080", "http://[::1]/"),
]


@pytest.mark.parametrize(("target", "expected"), PORTS)
def test_ports(target: str, expected: str) -> None:
    assert canonicalize(target).url == expected


def test_authority_form_keeps_its_port() -> None:
    # RFC 9112 §3.2.3: CONNECT needs the port even when it is the default.
    assert canonicalize("Example.COM:443", form="authority").url == "example.com:443"
    assert canonicalize("h:0443", form="authority").url == "h:443"
    assert canonicalize("[::1]:80").url == "[::1]:80"


# --- Path: remove-dot-segments (§5.2.4), empty-path (§6.2.3), dot-prefix (§4.2).

PATHS = [
    ("/a/b/c/./../../g", "/a/g"),
    ("/a/./b/../c", "/a/c"),
    ("/../a", "/a"),
    ("/a/..", "/"),
    ("/a/.", "/a/"),
    ("/a/b/..", "/a/"),
    ("/.", "/"),
    ("/..", "/"),
    ("/a/%2e%2E/b", "/b"),
    ("/a/.%2e/b", "/b"),
    ("/a/%2e/b", "/a/b"),
    ("/a/..b/.c/c./...", "/a/..b/.c/c./..."),
    ("/a/..;/b", "/a/..;/b"),  # not a dot segment in RFC 3986, only a finding
    ("/a%2F../b", "/a%2F../b"),  # "a%2F.." is one segment
    ("/a//../b", "/a/b"),
    ("http://h", "http://h/"),
    ("http://h?q", "http://h/?q"),
    ("//h", "//h/"),
    ("foo://h", "foo://h"),  # empty-path is §6.2.3 scheme-based: only for the http family
    ("http:/a/../b", "http:/b"),
    ("http:a/../b", "http:a/../b"),  # a rootless path is not hierarchical
    ("mailto:x/../y", "mailto:x/../y"),
    # relative references: a leading ".." climbs the base and must stay
    ("../../a", "../../a"),
    ("a/./b/../../..", "../"),
    ("x/../../y", "../y"),
    (".", "./"),
    ("..", "../"),
    ("a/..", "./"),
    ("a/b/..", "a/"),
    ("mid/content=5/../6", "mid/6"),
    # dot-prefix: the result must not read as a scheme or an authority
    ("a/../b:c", "./b:c"),
    ("./a:b", "./a:b"),
    ("/a:b/../c", "/c"),
    ("http:/.//a", "http:/.//a"),
]


@pytest.mark.parametrize(("target", "expected"), PATHS)
def test_paths(target: str, expected: str) -> None:
    assert canonicalize(target).url == expected


def test_dot_segments_above_root_are_dropped_and_reported() -> None:
    result = canonicalize("/a/../../../etc/passwd")
    assert result.url == "/etc/passwd"
    assert "dot-segment-above-root" in {f.rule for f in result.findings}


def test_remove_dot_segments_counts_climbs_above_root() -> None:
    assert rules.remove_dot_segments("/a/../../b") == ("/b", 1)
    assert rules.remove_dot_segments("/../../..") == ("/", 3)
    assert rules.remove_dot_segments("/a/b") == ("/a/b", 0)


def test_origin_form_path() -> None:
    assert canonicalize("//a/b", form="origin").url == "//a/b"  # RFC 9112 §3.2.1: a path
    assert canonicalize("//a/./b", form="origin").url == "/.//a/b"
    assert canonicalize("/.", form="origin").url == "/"
    assert canonicalize(".", form="origin").url == "/"
    assert canonicalize("a?b", form="origin").url == "/a?b"


# --- Opt-in lossy rules.

LOSSY = [
    ("merge-slashes", "/a//b///c", "/a/b/c"),
    ("merge-slashes", "http://h//a//b/", "http://h/a/b/"),
    ("merge-slashes", "/a//./b//", "/a/b/"),
    ("merge-slashes", "http://h//a", "http://h/a"),  # regression: the fast path let it through
    ("sort-query", "/?b=2&a=1&b=1&a", "/?a=1&a&b=2&b=1"),
    ("sort-query", "/?b&a#f", "/?a&b#f"),
    ("drop-empty-query", "/a?", "/a"),
    ("drop-empty-query", "/a?#f", "/a#f"),
    ("drop-params", "/?utm_source=x&a=1&fbclid=2", "/?a=1"),
    ("drop-params", "/?utm_source=x", "/"),
    ("drop-params", "/?a=1&gclid=2#f", "/?a=1#f"),
    ("decode-escaped-slash", "/a%2fb%2Fc", "/a/b/c"),
    ("decode-escaped-slash", "/a%5Cb", "/a%5Cb"),
    ("backslash-as-slash", "/a\\b\\\\c", "/a/b//c"),
    ("backslash-as-slash", "/a\\..\\b", "/b"),
    ("backslash-as-slash,+decode-escaped-slash", "/a%5cb", "/a/b"),
    ("strip-host-dot", "http://h./", "http://h/"),
    ("strip-host-dot", "http://a.b.c./x", "http://a.b.c/x"),
    ("strip-host-dot", "http://./", "http://./"),
    ("numeric-host", "http://0x7f.1/", "http://127.0.0.1/"),
    ("numeric-host", "http://2130706433/", "http://127.0.0.1/"),
    ("numeric-host", "http://0177.0.0.1/", "http://127.0.0.1/"),
    ("numeric-host", "http://1.2.3.4/", "http://1.2.3.4/"),
    ("strip-fragment", "/a#f", "/a"),
    ("strip-fragment", "/a#", "/a"),
]


@pytest.mark.parametrize(("rule", "target", "expected"), LOSSY)
def test_lossy_rules(rule: str, target: str, expected: str) -> None:
    policy = Policy().with_rules("+" + rule)
    assert canonicalize(target, policy).url == expected
    # ... and none of them runs by default.
    assert canonicalize(target).url != expected or target == expected


@pytest.mark.parametrize(
    ("target", "offset"),
    [
        ("/a%2fb", 2),
        ("/a/%5C", 3),
        ("http://h/x%2F", 10),
        # regression: a raw "\\" was escaped to the "%5C" the same policy then refused
        ("/a\\b", 2),
    ],
)
def test_reject_escaped_slash(target: str, offset: int) -> None:
    policy = Policy().with_rules("+reject-escaped-slash")
    with pytest.raises(InvalidTarget) as info:
        canonicalize(target, policy)
    assert (info.value.rule, info.value.component, info.value.offset) == (
        "reject-escaped-slash",
        "path",
        offset,
    )
    assert canonicalize("/?q=%2F", policy).url == "/?q=%2F"  # only the path


def test_strip_host_dot_is_idempotent() -> None:
    policy = Policy().with_rules("+strip-host-dot")
    once = canonicalize("http://h../", policy).url
    assert canonicalize(once, policy).url == once


# --- The WHATWG IPv4 parser behind numeric-host, against urlcanon's funky_ipv4.json.

FUNKY_IPV4 = json.loads(
    (Path(__file__).parents[1] / "data" / "urlcanon" / "funky_ipv4.json").read_text()
)


@pytest.mark.parametrize(("host", "expected"), sorted(FUNKY_IPV4.items()))
def test_parse_ipv4_urlcanon(host: str, expected: str | None) -> None:
    assert rules.parse_ipv4(host) == expected


# --- Runs of edits (issue #13): adjacent rewrites by one rule in one component are one Edit.


def test_edits_merge_adjacent_rewrites_of_one_rule() -> None:
    edits = rules.Edits(False, "/ <>é_é")
    edits.add("encode-unsafe", "path", 1, 2, " ", "%20")
    edits.add("encode-unsafe", "path", 2, 3, "<", "%3C")
    edits.add("encode-unsafe", "query", 3, 4, ">", "%3E")  # another component
    edits.add("encode-non-ascii", "query", 4, 5, "é", "%C3%A9")  # another rule
    edits.add("encode-non-ascii", "query", 6, 7, "é", "%C3%A9")  # not adjacent
    assert len(edits) == 4
    assert edits.starts == [1, 3, 4, 6]
    frozen = edits.freeze()
    assert [tuple(e) for e in frozen] == [
        ("encode-unsafe", "path", 1, 3, " <", "%20%3C"),
        ("encode-unsafe", "query", 3, 4, ">", "%3E"),
        ("encode-non-ascii", "query", 4, 5, "é", "%C3%A9"),
        ("encode-non-ascii", "query", 6, 7, "é", "%C3%A9"),
    ]
    assert edits.freeze() == frozen  # freezing twice changes nothing


def test_structural_edits_neither_merge_nor_fold() -> None:
    text = "/" + "a%" * (FOLD_AFTER + 2)
    edits = rules.Edits(False, text)
    for i in range(FOLD_AFTER):
        edits.add("encode-stray-percent", "path", 2 + 2 * i, 3 + 2 * i, "%", "%25")
    end = 2 * FOLD_AFTER + 1
    edits.whole("merge-slashes", "path", end, end + 1, "a", "b")  # (not a real rewrite)
    edits.whole("merge-slashes", "path", end + 1, end + 1, "", "c")  # adjacent, same rule
    edits.add("encode-stray-percent", "path", end + 2, end + 3, "%", "%25")  # after a structural
    frozen = edits.freeze()
    assert len(frozen) == FOLD_AFTER + 3
    assert [e.rule for e in frozen[-3:]] == [
        "merge-slashes",
        "merge-slashes",
        "encode-stray-percent",
    ]
    assert frozen[-1][2:] == (end + 2, end + 3, "%", "%25")


# --- The fold (issue #13): once a component holds FOLD_AFTER edits, the rest join the last.


def test_alternating_rules_fold_into_one_edit_named_after_them_in_pipeline_order() -> None:
    target = "/" + "\x01%" * (2 * FOLD_AFTER)
    r = canonicalize(target)
    assert r.url == "/" + "%01%25" * (2 * FOLD_AFTER)
    assert len(r.edits) == FOLD_AFTER
    for i, edit in enumerate(r.edits[:-1]):  # one per rewrite, alternating
        rule = "encode-stray-percent" if i % 2 else "encode-unsafe"
        assert (edit.rule, edit.start, edit.end) == (rule, 1 + i, 2 + i)
    folded = r.edits[-1]
    # encode-stray-percent comes before encode-unsafe in pipeline.RULES
    assert folded.rule == "encode-stray-percent+encode-unsafe"
    assert folded.rules == ("encode-stray-percent", "encode-unsafe")
    assert (folded.start, folded.end) == (FOLD_AFTER, len(target))
    assert folded.before == target[FOLD_AFTER:]
    assert folded.after == folded.before.replace("%", "%25").replace("\x01", "%01")
    assert r.url == "/" + "".join(e.after for e in r.edits)


def test_rewrites_apart_fold_with_the_text_between() -> None:
    target = "/" + "a%" * (FOLD_AFTER + 3) + "b"
    r = canonicalize(target)
    assert r.url == "/" + "a%25" * (FOLD_AFTER + 3) + "b"
    assert len(r.edits) == FOLD_AFTER
    assert all(e.rule == "encode-stray-percent" for e in r.edits)  # one rule: its plain name
    folded = r.edits[-1]
    assert (folded.start, folded.end) == (2 * FOLD_AFTER, 2 * FOLD_AFTER + 7)
    assert folded.before == "%a%a%a%"  # the untouched "a"s between, in both texts
    assert folded.after == "%25a%25a%25a%25"
    assert folded.rules == ("encode-stray-percent",)


def test_a_fold_stays_in_its_component() -> None:
    body = "a%" * (FOLD_AFTER + 1)
    target = "/" + body + "?" + body + "#" + body
    r = canonicalize(target)
    for component in ("path", "query", "fragment"):
        edits = [e for e in r.edits if e.component == component]
        assert len(edits) == FOLD_AFTER
        start = target.index(
            body,
            1 if component == "path" else target.index({"query": "?", "fragment": "#"}[component]),
        )
        assert edits[-1].end == start + len(body)
        assert edits[0].start == start + 1


def test_fewer_than_fold_after_edits_stay_apart() -> None:
    target = "/" + "\x01%" * (FOLD_AFTER // 2)
    r = canonicalize(target)
    assert len(r.edits) == FOLD_AFTER
    assert all("+" not in e.rule for e in r.edits)


def test_a_host_folds_each_of_its_two_passes() -> None:
    """lowercase-host reads the input, the character rules its lowercased text: each pass folds
    its own edits, the text between as that pass read it, and the passes apply in turn."""
    target = "http://" + "A%" * (2 * FOLD_AFTER) + "/"
    start = len("http://")
    r = canonicalize(target)
    host = [e for e in r.edits if e.component == "host"]
    assert len(host) == FOLD_AFTER + 1
    lower, chars = host[:FOLD_AFTER], host[FOLD_AFTER:]
    assert {e.rule for e in lower} == {"lowercase-host"}
    assert lower[-1].before == target[lower[-1].start : lower[-1].end]
    assert lower[-1].after == lower[-1].before.lower()
    (escape,) = chars
    assert (escape.rule, escape.start) == ("encode-stray-percent", start + 1)
    assert escape.before == target[escape.start : escape.end]
    assert escape.after == escape.before.lower().replace("%", "%25")
    text = target
    for edit in host:  # pass by pass: lowercase-host keeps the length, so offsets hold
        text = text[: edit.start] + edit.after + text[edit.end :]
    assert text == r.url


def test_folded_rule_names_follow_the_pipeline() -> None:
    assert rules.folded_name(frozenset({"encode-unsafe", "decode-unreserved"})) == (
        "decode-unreserved+encode-unsafe"
    )
    assert rules.folded_name(frozenset({"encode-unsafe"})) == "encode-unsafe"


@pytest.mark.parametrize(
    ("unit", "rule", "after"),
    [
        ("%", "encode-stray-percent", "%25"),
        ("%41", "decode-unreserved", "A"),
        ("%3c", "uppercase-escape", "%3C"),
        ("é", "encode-non-ascii", "%C3%A9"),
        ("\udcff", "encode-non-ascii", "%FF"),
        ("\x01", "encode-unsafe", "%01"),
        (" <", "encode-unsafe", "%20%3C"),
    ],
)
@pytest.mark.parametrize("component", ["path", "query", "fragment"])
def test_a_run_of_one_rule_is_one_edit(unit: str, rule: str, after: str, component: str) -> None:
    head = {"path": "/x", "query": "/x?", "fragment": "/x#"}[component]
    target = head + unit * 1000 + "y"
    r = canonicalize(target)
    assert r.url == head + after * 1000 + "y"
    assert [(e.rule, e.component) for e in r.edits] == [(rule, component)]
    (edit,) = r.edits
    assert (edit.start, edit.end) == (len(head), len(head) + len(unit) * 1000)
    assert target[edit.start : edit.end] == edit.before  # the offsets map back into the input
    assert edit.after == after * 1000


@pytest.mark.parametrize(
    "run",
    [
        *("%2e%2E", "%41%42%43", "%2f%2F", "%61%2e", "%3c%3c%3c%3c", "%41%3c", "%41%42%43%44%45"),
        *("é", "éé", " <", "\udcff", "é\x01"),  # runs of characters to escape, kept likewise
    ],
)
@pytest.mark.parametrize("component", ["host", "path", "query"])
def test_a_run_of_escapes_met_again_is_said_as_the_first_time(run: str, component: str) -> None:
    """`Scanner` keeps runs of escapes of one rule, and of characters to escape, that it has met
    (a lookup the next time): the result, edits included, is the same whether the run is new to
    it or kept, at any offset."""
    policy = Policy.profile("crawler")
    scanner = rules.scanner(component, slash="decode")
    head = {"host": "", "path": "/a", "query": "?a"}[component]
    for text in (head + run + "b", head + "x" + run, head + run + "-" + run):
        fresh = rules.Scanner(component, rules.charsets.UNRESERVED, "decode")
        seen = [scanner.scan(text, 7, edits := rules.Edits(False, "#" * 7 + text)), edits.freeze()]
        new = [fresh.scan(text, 7, edits := rules.Edits(False, "#" * 7 + text)), edits.freeze()]
        assert seen == new
        assert [scanner.scan(text, 7, e := rules.Edits(False, "#" * 7 + text)), e.freeze()] == seen
    target = "http://h/x" + run + "?" + run + "#" + run
    assert canonicalize(target, policy) == canonicalize(target, policy)


def test_runs_of_different_rules_stay_apart() -> None:
    """Each rewrite is still said, with its own rule: alternating rules make one edit each."""
    target = "/" + "\x01%" * 3 + "%00%0d" * 2
    r = canonicalize(target)
    assert r.url == "/" + "%01%25" * 3 + "%00%0D" * 2
    assert [(e.rule, e.start, e.end, e.before, e.after) for e in r.edits] == [
        ("encode-unsafe", 1, 2, "\x01", "%01"),
        ("encode-stray-percent", 2, 3, "%", "%25"),
        ("encode-unsafe", 3, 4, "\x01", "%01"),
        ("encode-stray-percent", 4, 5, "%", "%25"),
        ("encode-unsafe", 5, 6, "\x01", "%01"),
        ("encode-stray-percent", 6, 7, "%", "%25"),
        ("uppercase-escape", 10, 13, "%0d", "%0D"),  # "%00" between: no edit, not adjacent
        ("uppercase-escape", 16, 19, "%0d", "%0D"),
    ]
    for edit in r.edits:
        assert target[edit.start : edit.end] == edit.before


@pytest.mark.parametrize("component", ["userinfo", "host", "path", "query", "fragment"])
def test_canonical_escapes_leave_text_untouched(component: str) -> None:
    """The scanner's first test, one fullmatch, lets canonical escapes through ("%00", "%20")."""
    scanner = rules.scanner(component)
    text = "a%00%20%2F%C3%A9%25b"
    edits = rules.Edits(False, text)
    assert scanner.scan(text, 0, edits) is text
    assert not edits.freeze()
    for changed in ("%41", "%2f", "%", "%zz", "é", " "):
        assert not scanner.clean(text + changed)


# --- IPv6address (charsets.IPV6_ADDRESS): exactly what `ipaddress.IPv6Address` takes, among the
#     strings the IP-literal pattern lets through as an address ("[0-9A-Fa-f:.]+").


def _ipaddress_takes(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _h16s() -> st.SearchStrategy[str]:
    """Colon-separated groups of 0-5 hex digits, an IPv4-like tail and a "::" anywhere: shapes
    near the grammar's edges, which random text over the alphabet seldom reaches."""
    group = st.text("0123456789abcdefABCDEF", max_size=5)
    octet = st.sampled_from(["0", "1", "9", "10", "99", "100", "199", "249", "255", "256", "01"])
    tail = st.lists(octet, min_size=3, max_size=5).map(".".join)
    return st.builds(
        lambda groups, v4, gap, at: _insert(":".join(groups + v4), gap, at),
        st.lists(group, max_size=9),
        st.lists(tail, max_size=1),
        st.sampled_from(["", ":", "::", ":::"]),
        st.integers(min_value=0),
    )


def _insert(text: str, gap: str, at: int) -> str:
    at %= len(text) + 1
    return text[:at] + gap + text[at:]


@settings(max_examples=3000)
@given(st.one_of(st.text("0123456789abcdefABCDEF:.", max_size=45), _h16s()))
def test_ipv6_address_is_what_ipaddress_takes(text: str) -> None:
    literal = rules.ip_literal(f"[{text}]")
    assert (literal is not None) == _ipaddress_takes(text)


def test_ipv6_address_short_strings_exhaustively() -> None:
    for length in range(7):
        for chars in itertools.product("0a:.", repeat=length):
            text = "".join(chars)
            assert (rules.ip_literal(f"[{text}]") is not None) == _ipaddress_takes(text), text


# --- Every rule's declared examples (core/pipeline.py), through `canonicalize` (the compiled
#     twin where it serves) and the reference driver, under the default profile with the rule on.

EXAMPLES = [
    pytest.param(rule.name, example, id=f"{rule.name}:{example.target}")
    for rule in RULES
    for example in rule.examples
]


@pytest.mark.parametrize(
    "canon", [canonicalize, canonicalize_python], ids=["canonicalize", "reference"]
)
@pytest.mark.parametrize(("rule", "example"), EXAMPLES)
def test_every_rule_does_what_its_examples_say(
    canon: Callable[..., Result], rule: str, example: Example
) -> None:
    policy = Policy().with_rules(f"+{rule}")
    if example.canonical is None:  # the rule refuses it
        with pytest.raises(InvalidTarget) as refused:
            canon(example.target, policy)
        assert refused.value.rule == rule
        return
    result = canon(example.target, policy)
    assert result.url == example.canonical
    fired = {name for edit in result.edits for name in rule_names(edit.rule)}
    # The rule made the change, or (an example of what it leaves alone) made none.
    assert (rule in fired) == (example.canonical != example.target), result.edits


def test_every_rule_has_an_example_of_its_work() -> None:
    for rule in RULES:
        assert any(e.canonical != e.target for e in rule.examples), rule.name
