"""SURT keys (core/surt.py): the ia profile against the test data of the Internet Archive's
canonicalizers and, differentially, against the `surt` package on the real corpora; the urlsan
profile never merges what `canonicalize` keeps apart."""

from __future__ import annotations

import inspect
import json
import os
import pickle
import pydoc
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from urlsan.core import InvalidTarget, canonicalize, compiled, surt
from urlsan.core.split import split
from urlsan.core.surt import (
    IA_DIFFERENCES,
    _ia_key_full,
    _ia_key_plain,
    _normalize_path,
    _parse,
    _sort_query,
    _strip_path_session_ids,
    _unescape_repeatedly,
    ia_url,
    reverse_host,
)

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def ref() -> Any:
    """The `surt` package (the test extra installs it), the reference of the ia profile."""
    return pytest.importorskip("surt", reason="the surt package (test extra) is the reference")


def _latin1(name: str) -> dict[str, dict[str, str]]:
    # Upstream reads these files as Latin-1: "\u0080" in them is the byte 0x80.
    return json.loads((DATA / "urlcanon" / name).read_bytes().decode("latin-1"))  # type: ignore[no-any-return]


SURT_DATA = _latin1("surt.json")


def _cases(section: str) -> list[tuple[bytes, str]]:
    return [
        (k.encode("latin-1"), v.encode("latin-1").decode("ascii", "surrogateescape"))
        for k, v in SURT_DATA[section].items()
    ]


@pytest.mark.parametrize(("url", "expected"), _cases("defaultIASurt"))
def test_default_ia_surt(url: bytes, expected: str) -> None:
    assert surt(url) == expected


@pytest.mark.parametrize(
    ("section", "ia"),
    [
        ("Canonicalizer.DefaultIA", True),
        ("Canonicalizer.IA", True),
        ("google", False),
        ("googleSupplementalFromSurt", False),
    ],
)
def test_canonicalizers(section: str, ia: bool) -> None:
    got = {url: ia_url(url, ia=ia) for url, _ in _cases(section)}
    assert got == dict(_cases(section))


@pytest.mark.parametrize(("text", "expected"), _cases("unescapeRepeatedly"))
def test_unescape_repeatedly(text: bytes, expected: str) -> None:
    assert _unescape_repeatedly(text) == expected.encode("ascii", "surrogateescape")


@pytest.mark.parametrize(("query", "expected"), _cases("alphaRorderQuery"))
def test_query_order(query: bytes, expected: str) -> None:
    assert _sort_query(query) == expected.encode()


@pytest.mark.parametrize(("host", "expected"), _cases("massageHost"))
def test_www_folded(host: bytes, expected: str) -> None:
    assert surt(b"http://" + host + b"/") == surt(f"http://{expected}/")
    assert surt(b"http://" + host + b"/").startswith(reverse_host(expected)[:-1] + ")")


@pytest.mark.parametrize(("path", "expected"), _cases("stripPathSessionId"))
def test_path_session_ids(path: bytes, expected: str) -> None:
    assert _strip_path_session_ids(path) == expected.encode()


@pytest.mark.parametrize(
    ("host", "expected"),
    # urlcanon folds a comma in a label into a dot ("a,b" → "a.b"), which merges two hosts;
    # urlsan percent-encodes it.
    [(h, r) for h, r in _latin1("ssurt.json")["reverseHost"].items() if "," not in h],
)
def test_reverse_host(host: str, expected: str) -> None:
    assert reverse_host(host) == expected


def test_reverse_host_keeps_commas_apart() -> None:
    assert reverse_host("a,b.y.z") == "z,y,a%2Cb,"
    assert reverse_host("a,b.y.z") != reverse_host("b.a.y.z")


def test_dot_segments() -> None:
    assert _normalize_path(b"/a/./b/../c//d/") == b"/a/c/d/"
    assert _normalize_path(b"/../a") == b"/../a"


def test_surt_form_is_heritrix_form() -> None:
    assert (
        surt("http://www.archive.org/index.html", form="surt") == "http://(org,archive,)/index.html"
    )
    assert surt("dns:archive.org", form="surt") == "dns:archive.org"


# --- differentially against the surt package -----------------------------------------------


def _real_corpus() -> list[str]:
    """The real URLs of ../shared/data (ada-url's corpora), where the checkout has them."""
    urls: list[str] = []
    for name in ("ada-kasztp.txt", "ada-userbait.txt"):
        path = SHARED / name
        if path.exists():
            urls += path.read_text("utf-8-sig").splitlines()
    return urls


def _corpus() -> list[str]:
    urls = _real_corpus()
    urls += [
        o["input"]
        for o in json.loads((DATA / "urltestdata.json").read_text())
        if isinstance(o, dict)
    ]
    return urls


def test_agrees_with_surt_package_on_corpora(ref: Any) -> None:
    differ = []
    for url in _corpus():
        try:
            expected = ref.surt(url)
        except ValueError:  # a port that is not a number: urlsan raises too, typed
            with pytest.raises(InvalidTarget):
                surt(url)
            continue
        except AttributeError:  # surt fails on a blank URL; urlsan keys it "-"
            assert not url.strip(), url
            assert surt(url) == "-"
            continue
        if surt(url) != expected or surt(url, form="surt") != ref.surt(
            url, with_scheme=True, trailing_comma=True
        ):
            differ.append(url)
    # The one class of difference on these corpora: a host whose escapes decode to bytes that
    # are not UTF-8, which surt drops and urlsan reads as Latin-1 (IA_DIFFERENCES).
    assert [url for url in differ if not _non_utf8_host(url)] == []
    assert len(differ) < 10


def _non_utf8_host(url: str) -> bool:
    parsed = _parse(url.encode())
    host = _unescape_repeatedly(parsed[1] or b"") if parsed else b""
    try:
        host.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@given(st.text(alphabet="aAwW0178x.%25/?#&=:@[]() \t\u00e9;,", max_size=20))
def test_agrees_with_surt_package_on_generated(ref: Any, tail: str) -> None:
    for url in ("http://" + tail, tail):
        try:
            expected = ref.surt(url)
        except ValueError:
            with pytest.raises(InvalidTarget):
                surt(url)
            continue
        except AttributeError:
            assert surt(url) == "-"
            continue
        assert surt(url) == expected or _non_utf8_host(url)


# Session ids, repeated schemes and bytes to escape: the shapes the full path's shortcuts
# (`_escape_once`, the session-id and repeated-scheme prechecks) step aside for.
_SESSION_PARTS = st.sampled_from(
    ["a", "A", "/", "?", "&", "=", "(", ")", ".aspx", ".ASPX", "%25", "%e9", "\u00e9", " ", "#",
     "%23", "\x7f", "~", "jsessionid=0123456789abcdef0123456789abcdef",
     "JSESSIONID=0123456789ABCDEF0123456789ABCDEF", "PHPSESSID=0123456789abcdef0123456789abcdef",
     "sid=0123456789abcdef0123456789abcdef", "ASPSESSIONIDABCDEFGH=abcdefghijklmnopqrstuvwx",
     "CFID=12&CFTOKEN=34", "cfid=1", "sessionid", "(S(abcdefghijklmnopqrstuvwx))/",
     "(abcdefghijklmnopqrstuvwx)/", "http://", "https://"]
)  # fmt: skip


@given(
    st.sampled_from(["http://x.com/", "http://http://x.com/", "https://https://http://x.com/"]),
    st.lists(_SESSION_PARTS, max_size=12).map("".join),
)
def test_session_ids_and_escapes_agree_with_surt_package(ref: Any, start: str, rest: str) -> None:
    url = start + rest
    try:
        expected = ref.surt(url)
    except ValueError:
        return  # a port that is not a number (test_bad_port_is_a_typed_error)
    assert surt(url) == expected


# --- the plain-URL path against every step ------------------------------------------------

_PLAIN_PARTS = st.sampled_from(
    ["a", "A", "www", "WWW2", "0", "9", ".", "-", "_", "/", "//", "/.", "/..", "?", "&", "=",
     ":", ":80", ":443", ":0", ":99999", "#", "%41", "(", ")", "sid", "SessionId", "cfid=1",
     "jsessionid=0123456789abcdef0123456789abcdef", "\u212a", "\u017f", "\u00e9", " ", "\t",
     "[", "]", "@", "~", "|", "\\", '"']
)  # fmt: skip


def _ia_plain_in_c() -> Any:
    """urlsan.core._columns.ia_plain, where it is built; else None."""
    if os.environ.get("URLSAN_NO_EXTENSIONS") or compiled.twin is None:
        return None
    from urlsan.core._columns import ia_plain

    return ia_plain


def _short_paths() -> list[Any]:
    """The short path in Python, and in C where urlsan.core._columns is built."""
    paths = [pytest.param(_ia_key_plain, id="python")]
    if _ia_plain_in_c() is not None:
        paths.append(pytest.param(_ia_plain_in_c(), id="c"))
    return paths


needs_c = pytest.mark.skipif(_ia_plain_in_c() is None, reason="urlsan.core._columns not built")


@pytest.mark.parametrize("short", _short_paths())
@given(
    st.sampled_from(["http://", "https://", "HTTP://", "hTTpS://", "ftp://", "http:/"]),
    st.lists(_PLAIN_PARTS, max_size=12).map("".join),
)
def test_plain_path_agrees_with_every_step(short: Any, scheme: str, rest: str) -> None:
    # Wherever a short path answers, its key is the full steps'; the C one declines no URL the
    # Python one takes (it takes more: escapes, dot segments, numeric hosts...).
    url = scheme + rest
    key = short(url)
    if key is not None:
        assert key == _ia_key_full(url, False)
    if _ia_key_plain(url) is not None:
        assert key == _ia_key_plain(url)


# The shapes the C short path works through rather than declines: escapes (of delimiters, of
# escapes, of bytes outside ASCII, broken ones), dot and empty segments, spaces, printable
# hosts and dotted quads; and the shapes it must decline: session ids, IDNA, userinfo, IP
# literals, controls, white space at the end.
_ESCAPE_PARTS = st.sampled_from(
    ["a", "B", "0", "255", "256", "01", "www", "WWW2.", ".", "..", "/", "//", "/.", "/..", "?",
     "&", "=", "#", ":", ":80", ":0", ":8080", "%", "%2", "%25", "%2e", "%2E", "%2F", "%2f",
     "%41", "%7e", "%C3%A9", "%c3", "%23", "%3F", "%26", "%3D", "%20", "%00", "%7F", "%252e",
     "%%", " ", "(", ")", "/(", ".aspx", "sid=", "0123456789abcdef0123456789abcdef",
     "SessionId", "cfid=", "&cftoken=1", '"', "\\", ",", "@", "[", "]", "~", "\x7f", "\t",
     "\n", "\x0b", "\u00e9", "\u212a"]
)  # fmt: skip
_HOST_PARTS = st.sampled_from(
    ["a", "Z", "0", "1", "9", "10", "255", "256", "00", "01", "010", "0x1", ".", "-", "_",
     "www.", "WWW9.", '"', "'", "!", "*", ",", "\\", "%41", "%2e", "@", "[", "]", " "]
)  # fmt: skip


@needs_c
@given(
    st.sampled_from(["http://", "https://", "HTTP://", "https:", ""]),
    st.lists(_HOST_PARTS, min_size=1, max_size=6).map("".join),
    st.lists(_ESCAPE_PARTS, max_size=14).map("".join),
)
def test_c_short_path_agrees_with_every_step(scheme: str, host: str, rest: str) -> None:
    url = scheme + host + rest
    key = _ia_plain_in_c()(url)
    if key is not None:
        assert key == _ia_key_full(url, False)


@needs_c
@given(st.lists(st.integers(0, 300).map(str) | st.sampled_from(["0", "00", "01", "010", ""]),
                min_size=1, max_size=5).map(".".join),
       st.sampled_from(["/", "", ":81/x", "/a?b"]))  # fmt: skip
def test_c_short_path_numeric_hosts(host: str, rest: str) -> None:
    # A dotted quad that the numeric-host step gives back as it is: taken; any other numeric
    # host (octal, fewer parts, out of range) is the full steps', which read it as inet_aton.
    url = f"http://{host}{rest}"
    key = _ia_plain_in_c()(url)
    if key is not None:
        assert key == _ia_key_full(url, False)
    parts = host.split(".")
    if len(parts) == 4 and all(p and p == str(int(p)) and int(p) < 256 for p in parts):
        assert key is not None


@pytest.mark.parametrize("short", _short_paths())
def test_plain_path_takes_the_common_urls(short: Any) -> None:
    corpus = [url for url in _corpus() if url.startswith(("http://", "https://"))]
    taken = [url for url in corpus if short(url) is not None]
    assert [url for url in taken if short(url) != _ia_key_full(url, False)] == []
    real = [url for url in _real_corpus() if url.startswith(("http://", "https://"))]
    share = 0.99 if short is _ia_plain_in_c() else 0.9
    assert sum(short(url) is not None for url in real) >= share * len(real)
    for url in ("https://www.example.com/path/page.html?b=2&a=1", "http://example.org",
                "https://sub.example.co.uk:8443/a-b_c/d.php?x=1&y=2#frag"):  # fmt: skip
        assert short(url) == _ia_key_full(url, False), url
    for url in ("http://\u212a.com/", "http://a.com:99999/", "http://a.com/?jsessionid=1",
                "http://.a.com/", "http://1.2.3/", "http://010.1.1.1/", "http://u@a.com/",
                "http://a.com/?x=%6As%73essionid", "http://[::1]/",
                "http://a.com/x/(0123456789abcdef01234567)/a.aspx", "http://a%2Ecom/",
                "http://a.com/\t", "http://a.com/ "):  # fmt: skip
        assert short(url) is None, url
    long = "http://a.com/" + "b/" * 300 + "?" + "&".join(f"k{i}=v" for i in range(200, 0, -1))
    assert short(long) == _ia_key_full(long, False)


@needs_c
def test_c_short_path_takes_escapes_dot_segments_and_dotted_quads() -> None:
    ia_plain = _ia_plain_in_c()
    for url, key in [
        ("http://a.com/%7Efoo/./b/../c//d?x=%41&B=1#x", "com,a)/~foo/c/d?b=1&x=a"),
        ("http://1.2.3.4/", "4,3,2,1)/"),
        ('https://"www.time.com/a', 'com,time,"www)/a'),
        ("http://a.com/%2e%2e/%2F/x%23%25%C3%A9", "com,a)/../x%23%25%c3%a9"),
        ("http://a.com/a b/x(y).aspx?q=%26%3d", "com,a)/a%20b/x(y).aspx?=&q="),
        ("https://msdn.microsoft.com/library/aa260511(VS.60).aspx",
         "com,microsoft,msdn)/library/aa260511(vs.60).aspx"),
        ("https://yro.slashdot.org/article.pl?sid=00/11/03/1333202",
         "org,slashdot,yro)/article.pl?sid=00/11/03/1333202"),
    ]:  # fmt: skip
        assert ia_plain(url) == key == _ia_key_full(url, False), url


# --- surt() entered in C --------------------------------------------------------------------

_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("http://www.Archive.org:80/index.html?b=2&a=1",), {}),
    (("http://www.Archive.org:80/index.html?b=2&a=1",), {"profile": "ia"}),
    (("http://a.com/?jsessionid=0123456789abcdef0123456789abcdef",), {}),
    (("http://a.com/?jsessionid=0123456789abcdef0123456789abcdef",), {"profile": "ia"}),
    (("HTTP://a.com/x",), {"profile": "urlsan"}),
    (("HTTP://a.com/x",), {"form": "cdx"}),
    (("HTTP://a.com/x",), {"form": "surt"}),
    (("HTTP://a.com/x",), {"profile": "ia", "form": None, "policy": None}),
    ((b"http://B\xfccher.ch/",), {}),
    (("",), {}),
    (("http://a.com:x/",), {}),
    (("http://a.com:65536/",), {"profile": "ia"}),
    ((12,), {}),
    (("http://a.com/", "ia"), {}),
    ((), {}),
    (("http://a.com/",), {"profile": "heritrix"}),
    (("http://a.com/",), {"form": "ssurt"}),
    (("http://a.com/",), {"profile": "urlsan", "form": "cdx"}),
    (("http://a.com/",), {"policy": "crawler"}),
    (("http://a.com/",), {"url": "http://b.com/"}),
    (("http://a.com/",), {"bogus": 1}),
]


def _outcome(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    try:
        return ("value", fn(*args, **kwargs))
    except Exception as error:  # the error's class and text are the outcome
        return (type(error).__name__, str(error))


@pytest.mark.parametrize(("args", "kwargs"), _CALLS)
def test_surt_entered_in_c_answers_as_the_python_function(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    python = getattr(surt, "__wrapped__", surt)
    assert _outcome(surt, args, kwargs) == _outcome(python, args, kwargs)


@given(st.lists(_ESCAPE_PARTS | _HOST_PARTS, max_size=14).map("".join))
def test_surt_entered_in_c_keys_as_the_python_function(rest: str) -> None:
    python = getattr(surt, "__wrapped__", surt)
    for url in ("http://" + rest, rest):
        assert _outcome(surt, (url,), {}) == _outcome(python, (url,), {})
        assert _outcome(surt, (url,), {}) == _outcome(_ia_key_full, (url, False), {})


def test_surt_entered_in_c_reads_as_the_python_function() -> None:
    # help(), inspect and pickle see the Python function: its name, docstring and signature.
    python = getattr(surt, "__wrapped__", surt)
    assert surt.__name__ == python.__name__ == "surt"
    assert surt.__doc__ == python.__doc__
    assert surt.__module__ == "urlsan.core.surt"
    assert inspect.signature(surt) == inspect.signature(python)
    assert pickle.loads(pickle.dumps(surt)) is surt
    body = pydoc.render_doc(surt, renderer=pydoc.plaintext).split("\n", 1)[1]
    assert body == pydoc.render_doc(python, renderer=pydoc.plaintext).split("\n", 1)[1]
    if _ia_plain_in_c() is not None:
        assert type(surt).__name__ == "compiled_function"


@pytest.mark.parametrize(
    "host", ["1.2.3", "0177.0.0.1", "1.010.0.1", "3279880203", "1.2.3.256", "1.09.0.1", "0x7f.1"]
)
def test_numeric_hosts_as_inet_aton_reads_them(ref: Any, host: str) -> None:
    # surt asks the system resolver; for these numeric forms glibc answers without a query.
    assert surt(f"http://{host}/") == ref.surt(f"http://{host}/")


def test_non_utf8_bytes_keyed_as_the_bytes_are(ref: Any) -> None:
    # Text decoded with surrogateescape: surt fails on it; its bytes key as surt keys the bytes.
    raw = b"http://onlinestreet.de/strassen/in-M\xfcnchen.html"
    text = raw.decode("utf-8", "surrogateescape")
    assert surt(text) == ref.surt(raw).decode() == "de,onlinestreet)/strassen/in-m%fcnchen.html"
    with pytest.raises(UnicodeEncodeError):
        ref.surt(text)


def test_non_utf8_host_read_as_latin1(ref: Any) -> None:
    assert surt(b"http://B\xfccher.ch/") == "ch,xn--bcher-kva)/"
    assert ref.surt(b"http://B\xfccher.ch/") == b"ch,bcher)/"  # surt drops the byte


def test_bad_port_is_a_typed_error() -> None:
    with pytest.raises(InvalidTarget, match="port"):
        surt("http://example.com:http/")
    with pytest.raises(InvalidTarget):
        surt("http://example.com:65536/")


def test_blank_is_a_dash() -> None:
    assert surt("") == surt(" \t ") == "-"


def test_differences_are_documented() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "archives.md").read_text()
    for name in IA_DIFFERENCES:
        assert name in page, name


# --- the urlsan profile --------------------------------------------------------------------


def test_urlsan_profile_keeps_what_ia_merges() -> None:
    pairs = [
        ("http://www.example.com/", "http://example.com/"),
        ("http://example.com/A", "http://example.com/a"),
        ("http://example.com/?b=1&a=2", "http://example.com/?a=2&b=1"),
        ("https://example.com/", "http://example.com/"),
        ("http://example.com/?a=%26b", "http://example.com/?a=&b"),
        ("http://u@example.com/", "http://example.com/"),
        ("http://example.com/#x", "http://example.com/"),
    ]
    for one, other in pairs:
        assert surt(one, profile="urlsan") != surt(other, profile="urlsan")
    assert surt("http://www.example.com/", profile="urlsan") == "http://(com,example,www,)/"


def test_urlsan_profile_merges_what_canonicalize_merges() -> None:
    assert surt("HTTP://Example.COM:80/%7e/./a", profile="urlsan") == surt(
        "http://example.com/~/a", profile="urlsan"
    )


# Enough of the hex digits that escapes of the key's delimiters (%2C, %25, %40...) and of other
# characters (%22) are drawn too.
_HOSTS = st.text(alphabet="ab.,()@%:C2459084", max_size=7)


@given(_HOSTS, _HOSTS, st.sampled_from(["", ":1", ":80"]), st.text(alphabet="ab/?#%", max_size=4))
def test_urlsan_profile_is_one_to_one(h1: str, h2: str, port: str, rest: str) -> None:
    # Two URLs share a key only when canonicalize gives them one canonical form.
    one, other = f"http://{h1}{port}/{rest}", f"http://{h2}/{rest}"
    same_key = surt(one, profile="urlsan") == surt(other, profile="urlsan")
    assert same_key == (canonicalize(one).url == canonicalize(other).url)


def test_urlsan_profile_escapes_nothing_twice() -> None:
    # A real URL (a stray quote before the host): canonicalize escapes it once, the key keeps it.
    url = 'https://"www.people.com/people/article/0'
    assert canonicalize(url).url == "https://%22www.people.com/people/article/0"
    assert surt(url, profile="urlsan") == "https://(com,people,%22www,)/people/article/0"
    # Only an escape that would read as one of the key's delimiters is escaped again.
    assert reverse_host("a%2Cb.c") == "c,a%252Cb,"
    assert reverse_host("a,b.c") == "c,a%2Cb,"


_KEY_SAFE_HOST = st.text(alphabet="abAB0123456789-._~%!$&'*+;=\"<>{}^|", min_size=1, max_size=12)


@given(_KEY_SAFE_HOST, st.text(alphabet='ab/?#%.:@,()"2Cx', max_size=10))
def test_urlsan_key_holds_the_canonical_host_and_path(host: str, rest: str) -> None:
    # The key is made from canonicalize's URL: its host (labels reversed) and path appear in it
    # as they are, whatever escapes canonicalize wrote.
    result = canonicalize(f"http://{host}/{rest}")
    parts = split(result.url, "absolute")
    assume(parts.host[0] and parts.userinfo[0] is None and not set(",()@") & set(parts.host[0]))
    assume(not re.search(r"%(25|2[Cc89]|40)", parts.host[0]))
    key = surt(f"http://{host}/{rest}", profile="urlsan")
    labels = parts.host[0].split(".")
    assert key.startswith(f"http://({','.join(reversed(labels))},")
    assert key.split(")", 1)[1].startswith(parts.path[0] or "")


def test_urlsan_profile_without_authority() -> None:
    assert (
        surt("mailto:A@Example.com", profile="urlsan") == canonicalize("mailto:A@Example.com").url
    )


def test_policy_and_profile_errors() -> None:
    assert surt("http://a.com/?utm_source=x&b=1", profile="urlsan", policy="crawler") == (
        "http://(com,a,)/?b=1"
    )
    with pytest.raises(ValueError, match="profile"):
        surt("http://a.com/", profile="heritrix")
    with pytest.raises(ValueError, match="form"):
        surt("http://a.com/", form="ssurt")
    with pytest.raises(ValueError, match="scheme"):
        surt("http://a.com/", profile="urlsan", form="cdx")
    with pytest.raises(TypeError):
        surt(12)  # type: ignore[arg-type]
