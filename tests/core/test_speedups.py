"""The compiled twin (core/_speedups.c) against the pure-Python reference.

What a user relies on: for every target,
``_speedups.canonicalize(target, twin_flags(policy), form)`` is either None (not a target the
twin handles) or exactly the `Result` that
``canonicalize_python(target, policy, form=form)`` returns: the same URL, edits and findings, of
the same types.  The query rules (policy.QUERY_RULES) are the exception: canonicalize runs them
on the twin's result, so the twin alone answers as the reference does with them off.  It never
raises for a str target, and `canonicalize` (twin, then query rules, then fast path, then the
reference) returns what the reference returns.

The module is skipped where the extension is not built, except `test_twin_is_loaded`, which fails
then unless ``URLSAN_NO_EXTENSIONS`` says the pure-Python build was meant.  Budgets come from the
hypothesis profiles of conftest.py (``HYPOTHESIS_PROFILE=ci-long`` hunts harder).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import pickle
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, event, example, given
from hypothesis import strategies as st

from urlsan.core import compiled
from urlsan.core.canonical import canonicalize, canonicalize_python, twin_flags
from urlsan.core.policy import PROFILES, QUERY_RULES, REQUIRED_RULES, RULE_NAMES, Policy
from urlsan.core.result import FOLD_AFTER, Edit, Finding, InvalidTarget, Result

DATA = Path(__file__).parents[1] / "data"
FORMS = ("auto", "origin", "absolute", "authority", "asterisk")

needs_twin = pytest.mark.skipif(
    compiled.twin is None,
    reason="urlsan.core._speedups is not built (no C compiler, or URLSAN_NO_EXTENSIONS set)",
)


def test_twin_is_loaded() -> None:
    """Not skipped: a build that silently lost the extension fails here, not quietly slower."""
    if os.environ.get("URLSAN_NO_EXTENSIONS"):
        assert compiled.twin is None, "URLSAN_NO_EXTENSIONS is set, yet the twin was loaded"
        assert twin_flags(Policy()) == -1
        return
    assert compiled.twin is not None, (
        "the compiled twin urlsan.core._speedups did not load; rebuild with a C compiler "
        "(pip install -e .) or set URLSAN_NO_EXTENSIONS=1 to run pure Python on purpose"
    )
    assert twin_flags(Policy()) >= 0


# --- policies: every profile, and single switches of the rules the twin has a bit for.

RULE_SPECS = (
    "-decode-unreserved",
    "-uppercase-escape",
    "-decode-unreserved,-uppercase-escape",
    "-lowercase-host",
    "-lowercase-scheme",
    "-remove-dot-segments",
    "-empty-path",
    "-drop-default-port",
    "-strip-port-zeros",
    "-drop-empty-port",
    "-strip-port-zeros,-drop-empty-port",
    "+strip-fragment",
    "+merge-slashes",
    "+decode-escaped-slash",
    "+backslash-as-slash",
    "+decode-escaped-slash,+backslash-as-slash",
    "+reject-escaped-slash",
    "+sort-query",
    "+drop-params",
    "+drop-empty-query",
    "+strip-host-dot,+numeric-host,-idna-host",
)
POLICIES: dict[str, Policy] = {
    "Policy()": Policy(),
    **{f"profile:{name}": Policy.profile(name) for name in PROFILES},
    **{spec: Policy().with_rules(spec) for spec in RULE_SPECS},
    "rfc2396-decode-unreserved": Policy.profile("rfc2396").with_rules("-decode-unreserved"),
    "rfc2396+strip-fragment": Policy.profile("rfc2396").with_rules("+strip-fragment"),
    "required-only": Policy(rules=REQUIRED_RULES),
}
TWIN_POLICIES = {name: p for name, p in POLICIES.items() if twin_flags(p) >= 0}


def outcome(func: Callable[..., Result], target: str | bytes, policy: Policy, form: str) -> object:
    """The Result, or the exception as a comparable value."""
    try:
        return func(target, policy, form=form)
    except InvalidTarget as e:
        return ("InvalidTarget", e.rule, e.component, e.offset, e.message)
    except ValueError as e:
        return ("ValueError", str(e))


def without_query_rules(policy: Policy) -> Policy:
    """What the twin alone answers for: canonicalize runs the query rules on its result."""
    return dataclasses.replace(policy, rules=policy.rules - QUERY_RULES)


def check_twin(target: str, policy: Policy, form: str) -> object:
    """The differential check; returns the twin's Result, or the InvalidTarget it raised (under
    a strict policy) as `outcome` makes it comparable (None: declined or not served)."""
    if twin_flags(policy) < 0:
        return None
    assert compiled.twin is not None
    try:
        got: object = compiled.twin(target, twin_flags(policy), form)
    except InvalidTarget as e:
        assert policy.strict, f"the twin raised {e!r} under a policy that is not strict"
        got = ("InvalidTarget", e.rule, e.component, e.offset, e.message)
    if got is None:
        return None
    expected = outcome(canonicalize_python, target, without_query_rules(policy), form)
    assert got == expected, (
        f"twin differs from the reference for {target!r}, {policy!r}, form={form!r}:\n"
        f"  twin      {got!r}\n  reference {expected!r}"
    )
    if type(got) is tuple:  # the InvalidTarget, compared in full above
        return got
    assert type(got) is Result, type(got)
    assert type(got.input) is str and type(got.url) is str
    assert got.url.isascii(), got.url
    assert type(got.edits) is tuple and type(got.findings) is tuple
    for edit in got.edits:
        assert type(edit) is Edit, edit
        assert [type(x) for x in edit] == [str, str, int, int, str, str], edit
    for finding in got.findings:
        assert type(finding) is Finding, finding
        assert [type(x) for x in finding] == [str, str, int, str, int, tuple], finding
        assert all(type(x) is int for x in finding.offsets), finding
    return got


def check_canonicalize(target: str | bytes, policy: Policy, form: str) -> None:
    got = outcome(canonicalize, target, policy, form)
    expected = outcome(canonicalize_python, target, policy, form)
    assert got == expected, (
        f"canonicalize differs from canonicalize_python for {target!r}, {policy!r}, "
        f"form={form!r}:\n  canonicalize {got!r}\n  reference    {expected!r}"
    )


def check_everywhere(target: str) -> None:
    """Twin vs reference, and canonicalize vs reference, over every policy and form."""
    handled = False
    for policy in POLICIES.values():
        for form in FORMS:
            handled |= check_twin(target, policy, form) is not None
            check_canonicalize(target, policy, form)
    event("twin handled it somewhere" if handled else "twin declined everywhere")


# --- strategies

SURROGATE = st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF)
ANY_CHAR = st.one_of(
    st.sampled_from("%/.?#&=;:@\\ aA~é\udcff\udcc0\udc800123456789abcdefABCDEFuUxX"),
    st.characters(codec=None),  # any code point, surrogates included
    SURROGATE,
    st.characters(max_codepoint=127),
)
# Arbitrary text, alone or after a head the twin accepts, so that it gets to read the rest.
ANY_TEXT = st.tuples(
    st.sampled_from(["", "", "/", "/?", "/#", "http://h/", "HTTP://Example.COM:0080", "wss://h?"]),
    st.text(ANY_CHAR, max_size=80),
).map("".join)


@st.composite
def random_case(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.swapcase() if f else c for c, f in zip(text, flips, strict=True))


UNRESERVED_BYTES = [ord(c) for c in "AZaz09-._~"]
RESERVED_BYTES = [ord(c) for c in ":/?#[]@!$&'()*+,;="]
# What the reference reports as a finding ("%25", "%00", "%0D", overlong leads, "%2E", "%2F"…).
TRICKY_BYTES = [0x00, 0x0A, 0x0D, 0x25, 0x2E, 0x2F, 0x5C, 0x7F, 0x80, 0xC0, 0xC1, 0xE0, 0xF0, 0xFF]
TAME_BYTES = [b for b in range(256) if b not in TRICKY_BYTES]


def escapes(byte: st.SearchStrategy[int]) -> st.SearchStrategy[str]:
    """ "%XX" with each hex digit in random case."""
    return byte.flatmap(lambda b: random_case(f"{b:02X}")).map(lambda h: "%" + h)


WORD = st.text(st.sampled_from("abcXYZ019-_.~"), min_size=1, max_size=4)
NON_ASCII_TAME = st.one_of(
    st.sampled_from(["é", "€", "😀", "\U0010ffff", "\u0080", "\ud800", "\udfff", "\udcff"]),
    st.characters(min_codepoint=0x80).filter(lambda c: c not in "\udcc0\udcc1"),
)
# Pieces the twin handles: no escape it reports, no "%u", no backslash.
TAME_PIECE = st.one_of(
    WORD,
    escapes(st.sampled_from(UNRESERVED_BYTES)),
    escapes(st.sampled_from(RESERVED_BYTES)),
    escapes(st.sampled_from(TAME_BYTES)),
    st.sampled_from(["%", "%%", "%4", "%g1", "%zz", "%é", "%%41", "%C3%A9"]),
    st.sampled_from(["%2E", "%2e", "x%2Ey", ".%2E", "%2e%2E%2e"]),  # escaped-dot, dot segments
    st.sampled_from(list("\x00\x01\t\n\r\x1f\x7f \"<>{}|^`[]#?&=;:@!$'()*+,~")),
    NON_ASCII_TAME,
)
# Pieces it must decline (or the reference reports a finding for).
HOSTILE_PIECE = st.one_of(
    TAME_PIECE,
    escapes(st.sampled_from(TRICKY_BYTES)),
    escapes(st.integers(0, 255)),
    st.text(st.sampled_from("0123456789abcdefABCDEFgGuUzZ%/.é"), max_size=2).map(lambda s: "%" + s),
    st.sampled_from(["%25", "%2e", "%2F", "%5c", "%u", "%u0041", "%U00e9", "%c0%af", "%e0%80%af"]),
    st.sampled_from(["\\", "\udcc0\udc80", "\udcc1", "\\\\"]),
    st.sampled_from(
        ["\uff0e", "\uff0f", "\u2025", "\u2026", "%EF%BC%8E", "%ef%bc%85", "%E2%80%A5"]
    ),
    SURROGATE,
    st.characters(min_codepoint=0x80),
)
DOTS = st.sampled_from([".", "..", "", ";", "..;", ".;x", "..;a=b", "...", ".a", "a."])


def path(piece: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    segment = st.one_of(DOTS, st.lists(piece, max_size=4).map("".join))
    return st.lists(segment, max_size=7).map("/".join)


def query(piece: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pairs = st.one_of(piece, st.sampled_from(["&", "=", "&=", "utm_source=x", "a=1&b=2"]))
    return st.one_of(
        st.just(""), st.just("?"), st.lists(pairs, max_size=6).map(lambda q: "?" + "".join(q))
    )


def fragment(piece: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.just(""), st.lists(piece, max_size=4).map(lambda f: "#" + "".join(f)))


TWIN_SCHEME = st.sampled_from(["http", "https", "ws", "wss"]).flatmap(random_case)
OTHER_SCHEME = st.sampled_from(
    ["ftp", "file", "httpx", "h", "http+x", "mailto", "urn", "", "1http", "é", "httpsss"]
)
LABEL = st.text(st.sampled_from("abcdefxyzABCXYZ0123456789-"), min_size=1, max_size=6)
LDH_HOST = st.lists(LABEL, min_size=1, max_size=4).map(".".join)
OTHER_HOST = st.one_of(
    LDH_HOST.map(lambda h: h + "."),  # trailing dot
    LDH_HOST.map(lambda h: h + "_x"),
    st.sampled_from(
        [
            "Example.COM",
            "127.0.0.1",
            "0x7f.1",
            "0X7F.0.0.1",
            "a.1",
            "a.0x",
            "2130706433",
            "b.0xg",
            "1a",
            "a..b",
            ".a",
            "-",
            "[::1]",
            "[v1.x]",
            "bücher.ch",
            "xn--bcher-kva.ch",
            "user@h",
            "u:p@h",
            "h%41",
            "a b",
            "a:b",
            "[zz]",
            "[::1",
            "[::1%41]",
            "[::1]x",
            "",
            "\udcff",
        ]
    ),
)
PORT = st.sampled_from(
    ["", ":", ":0", ":00", ":80", ":443", ":080", ":0080", ":00443", ":8080", ":65536", ":1:2"]
)


@st.composite
def url_shaped(draw: st.DrawFn) -> str:
    """Half tame (what the twin serves, dirty as traffic is), half hostile."""
    hostile = draw(st.booleans())
    piece = HOSTILE_PIECE if hostile else TAME_PIECE
    kind = draw(st.sampled_from(["absolute", "origin", "other" if hostile else "origin"]))
    p = draw(path(piece))
    if kind == "absolute":
        scheme = draw(st.one_of(TWIN_SCHEME, OTHER_SCHEME) if hostile else TWIN_SCHEME)
        host = draw(st.one_of(LDH_HOST, OTHER_HOST) if hostile else LDH_HOST)
        head = f"{scheme}://{host}{draw(PORT)}"
        if p or draw(st.booleans()):
            p = "/" + p
    elif kind == "origin":
        # "//a" given as origin-form is a path (RFC 9112 §3.2.1); "/.//", "/..//" and
        # "/a//../..//" are what dot removal leaves starting with "//": the dot-prefix guard.
        head = draw(st.sampled_from(["/", "/", "/", "//", "/.//", "/..//", "/a//../..//", "//../"]))
        p = p if hostile else p.lstrip("/")
    else:
        head = draw(st.sampled_from(["", "//", "//h", "http:", "http:/", "h:443", "*"]))
    return head + p + draw(query(piece)) + draw(fragment(piece))


TARGETS = st.one_of(ANY_TEXT, url_shaped())


# --- differential property tests


@needs_twin
@given(target=ANY_TEXT)
@example(target="")
@example(target="/")
@example(target="%")
@example(target="/\udcff\udcc0\udc80")
@example(target="http://")
@example(target="http://h:")
@example(target=":")
def test_twin_matches_reference_on_any_text(target: str) -> None:
    check_everywhere(target)


@needs_twin
@given(target=url_shaped())
@example(target="HTTP://Example.COM:0080/%7euser/./a/../b%2fc?q=%41 b#%7e")
@example(target="/a/./b/../%41%7e%7E%zz%%41?é#\udcff")
@example(target="wss://H:00443")
@example(target="http://h/..;/a/../../b")
# escape tricks that overlap ("%C0%AF" holds a second "%"), escaped slashes counted, per component
@example(target="http://u%2541@h/%c0%af%25%2541%2f%2F%5c/%2e./a\\b?%C0%80%u0041#%e0%80%af%00")
@example(target="/\udcc0\udc80%c0%af%0a?\udcc1\udcbf%0D%c1%bf#%F0%8a%%25")
@example(target="/.//..//etc/passwd?q")
@example(target="//..//..//..//etc/passwd")
def test_twin_matches_reference_on_url_shaped_text(target: str) -> None:
    check_everywhere(target)


OPTIONAL_RULES = sorted(set(RULE_NAMES) - REQUIRED_RULES)


@st.composite
def any_policy(draw: st.DrawFn) -> Policy:
    rules = draw(st.sets(st.sampled_from(OPTIONAL_RULES)))
    if {"decode-escaped-slash", "reject-escaped-slash"} <= rules:
        rules.discard(draw(st.sampled_from(["decode-escaped-slash", "reject-escaped-slash"])))
    return Policy(
        rules=REQUIRED_RULES | rules,
        unreserved_2396=draw(st.booleans()),
        strict=draw(st.booleans()),
    )


@needs_twin
@given(target=TARGETS, policy=any_policy(), form=st.sampled_from(FORMS))
def test_twin_matches_reference_under_any_rule_set(target: str, policy: Policy, form: str) -> None:
    check_twin(target, policy, form)
    check_canonicalize(target, policy, form)


@needs_twin
@given(target=TARGETS, policy=any_policy(), form=st.sampled_from(FORMS))
@example(target="/caf\udcc3\udca9/\udcff%7e", policy=Policy(), form="origin")
def test_bytes_take_the_twin_as_their_text_does(target: str, policy: Policy, form: str) -> None:
    # The C entry decodes bytes itself (a proxy holds its targets as bytes): the same Result,
    # or the same InvalidTarget, as the reference given the same bytes.
    try:
        data = target.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        assume(False)  # a lone surrogate outside U+DC80-U+DCFF stands for no byte
        return
    check_canonicalize(data, policy, form)


@needs_twin
@given(target=TARGETS, flags=st.integers(0, 2**16 - 1), form=st.sampled_from([*FORMS, "x", ""]))
def test_twin_never_raises_for_any_flags(target: str, flags: int, form: str) -> None:
    # Flags no policy produces must still give None or a Result, never an error or a crash;
    # with the strict switch, InvalidTarget too (what a strict policy refuses).
    assert compiled.twin is not None
    try:
        result = compiled.twin(target, flags, form)
    except InvalidTarget:
        assert flags & compiled._strict
        return
    assert result is None or (type(result) is Result and result.input == target)


@needs_twin
def test_compiled_entry_pickles_by_reference() -> None:
    """--jobs, Dask and Spark pickle `canonicalize`: the C entry goes by its name, as a Python
    function does."""
    assert type(canonicalize).__name__ == "compiled_function"
    assert pickle.loads(pickle.dumps(canonicalize)) is canonicalize


HASHED = [
    "HTTP://Example.COM:0080/%7euser/./a/../b%2fc?q=%41 b#%7e",
    "/a/./b/../%41%7e%7E%zz%%41?é#\udcff",
    "http://u:p@[FE80::1%25Eth0]:443/index%2Epdf",
    "/%252e%252e/x\\y",
]


@needs_twin
def test_compiled_results_hash_as_their_pure_twins() -> None:
    """A compiled Result, and its Edits and Findings, hash as the reference's equal ones do: a
    set or a dict key mixes them.  Each target twice over, so that the second Results are the
    first ones' tuples, refilled in place (the twin's pool)."""
    from urlsan.core.canonical import reference

    for target in HASHED * 2:
        pure = reference(target, Policy(), "auto", None)
        got = compiled.twin(target, twin_flags(Policy()), "auto") if compiled.twin else None
        assert got == pure
        assert hash(got) == hash(pure)
        assert [hash(e) for e in got.edits] == [hash(e) for e in pure.edits]
        assert [hash(f) for f in got.findings] == [hash(f) for f in pure.findings]
        assert got in {pure} and len({got, pure}) == 1
        del got  # let the pool take it back


def _read_often() -> list[type]:
    """The NamedTuples read on every request, whose fields the twin makes slots."""
    from urlsan.addon import decision, sanitizer, target
    from urlsan.audit.traffic import Request

    return [Result, Edit, Finding, Request, target.Checked, decision.Settings, decision.Outcome,
            sanitizer.Settings]  # fmt: skip


@needs_twin
@pytest.mark.parametrize("cls", _read_often(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_fields_read_as_slots_are_the_tuples_items(cls: type) -> None:
    """Each field of a NamedTuple read on every request is a slot (a member descriptor, which
    CPython reads without the generic lookup) that reads its item, for instances built every
    way a NamedTuple is: its __new__, _make, _replace, pickling, copying, and a subclass."""
    fields = cls._fields  # type: ignore[attr-defined]
    assert all(type(vars(cls)[name]).__name__ == "member_descriptor" for name in fields)
    items = [object() for _ in fields]
    made = cls._make(items)  # type: ignore[attr-defined]
    sub = type("Sub", (cls,), {"__slots__": ()})._make(items)
    for value in (made, cls(*items), pickle.loads(pickle.dumps(made._replace())), sub):
        assert [getattr(value, name) for name in fields] == list(value)
    replaced = made._replace(**{fields[-1]: "last"})
    assert getattr(replaced, fields[-1]) == "last" == replaced[-1]
    with pytest.raises(AttributeError):
        setattr(made, fields[0], "x")


@needs_twin
def test_fields_as_slots_takes_only_a_tuple_with_named_fields() -> None:
    """A class that is no tuple, or whose ``_fields`` are not a tuple of names, is refused."""
    from urlsan.core import _speedups

    class Plain:
        _fields = ("a",)

    for cls in (Plain, int, type("Unnamed", (tuple,), {"_fields": (1,)}), tuple):
        with pytest.raises((TypeError, AttributeError)):
            _speedups.fields_as_slots(cls)


@needs_twin
def test_many_columns_raise_what_a_result_field_raises() -> None:
    """The column loop passes on the error of a Result whose edits cannot be read, with no list
    beside it (a SystemError before)."""
    from urlsan.core import _speedups
    from urlsan.core.canonical import derived

    class NoEdits:
        url = "/x"

        @property
        def edits(self) -> tuple[Edit, ...]:
            raise LookupError("no edits")

    def python(*args: object, **kwargs: object) -> object:
        return NoEdits()

    entry = _speedups.entry(
        python,
        python,
        python,
        derived,
        Policy(),
        Policy,
        {"twin": None},  # type: ignore[arg-type]
    )
    with pytest.raises(LookupError, match="no edits"):
        _speedups.columns(entry, ["/y"], Policy(), " ")


@needs_twin
def test_compiled_twin_none_sets_the_c_entry_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    """``compiled.twin = None`` turns the twin off for the C entry too, at once, and back on
    (the entry reads the switch again only when compiled.py's globals change).  declined()
    tells whether the twin ran: it is None after a target the twin served."""
    assert compiled.declined is not None
    canonicalize("ftp://h/")  # declined by the twin: it says why
    declined = compiled.declined()
    assert declined is not None
    for _ in range(2):
        with monkeypatch.context() as m:
            m.setattr(compiled, "twin", None)
            assert canonicalize("HTTP://H/%7e") == canonicalize_python("HTTP://H/%7e")
            assert compiled.declined() == declined  # the twin did not run
        assert canonicalize("HTTP://H/%7e") == canonicalize_python("HTTP://H/%7e")
        assert compiled.declined() is None  # it did
        canonicalize("ftp://h/")


@needs_twin
def test_twin_refuses_bad_arguments() -> None:
    twin: Any = compiled.twin
    flags = twin_flags(Policy())
    for args in [(b"/a", flags, "auto"), ("/a", "0", "auto"), ("/a", flags, None), ("/a",)]:
        with pytest.raises(TypeError):
            twin(*args)
    with pytest.raises(ValueError):
        twin("/a", -1, "auto")
    with pytest.raises((ValueError, OverflowError)):
        twin("/a", 2**40, "auto")
    with pytest.raises(OverflowError):
        twin("/a", 2**80, "auto")
    for form in ("asterisk", "reference", "bogus"):
        assert twin("/a", flags, form) is None
    # As authority-form, "/a" is all host: the twin escapes its "/" as the reference does.
    assert check_twin("/a", Policy(), "authority") is not None


# --- the twin must engage on everyday dirty targets, and decline what it does not handle

ENGAGES = [
    "HTTP://Example.COM/",
    "hTTpS://WWW.Example.com:443/a",
    "http://h:80/",
    "https://h:443",
    "ws://h:80/x",
    "WSS://H:443/",
    "http://h/%7euser",
    "http://h/%41%42%43",
    "http://h/%7e?%7e#%7e",
    "/a/./b/../",
    "/a/./b/../c?x#y",
    "/..",
    "/../a",
    "/a/..;/b",
    "http://h/a/../../b",
    "http://h/é",
    "/café",
    "http://h/\udcff",
    "http://h/a b",
    "/a b?c d#e f",
    "/100%",
    "/a%zz",
    "/a%4",
    "http://h:0080/",
    "http://h:/",
    "http://h",
    "http://h?q",
    "http://h#f",
    "/",
    "/?",
    "/#",
    "/a;b=c",
    "/%e9%E9",
    "http://a-b.c-d.e1/f",
    "/a/b/c",
    # escapes the reference reports as findings, with the findings (issue #13)
    "/%2e%2e/",
    # escaped-dot: a "%2E" inside a segment, which hides an extension or a dot file
    "/index%2Ehtml",
    "http://h/a/.%68tac%2e/b?x%2E#y%2e",
    "/a%2e;x/b%2E%2e/%2E%2E%2E/c%2E/..;%2e",
    "/a\\b%2e",
    "/a/%2E./b/.%2e;x/%2e",
    "http://h/a%2Fb",
    "/a%2fb",
    "/a%5Cb",
    "/a%25",
    "/a?%2541",
    "/%00",
    "/a%0d%0a?%0A#%0D",
    "/?%c0%af%C1%80%e0%80%af%f0%80%80%af",
    "/a?\udcc0\udc80\udcc1\udcbf",
    "/%u0041?%U00e9#%u",
    "/a\\b\\",
    "/a?b\\c",
    # hosts: "_" (RFC 3986 §3.2.2 unreserved), a dotted-decimal IPv4 address
    "http://h_h/",
    "http://A_b_C.Example_X.com:0080/",
    "http://127.0.0.1/",
    "http://255.255.255.255:8080/a",
    # userinfo, IP literals (RFC 6874 zones too), numeric hosts, a trailing dot
    "http://user@h/",
    "http://u:p@h/",
    "http://User:Pa%73s@H/a",
    "http://a%7eb@h/",
    "http://anonymous:@h/",
    "http://[::1]/",
    "http://[2001:DB8::A]:8080/",
    "http://[FE80::1%25Eth0]/",
    "http://[fe80::1%en0]/",
    "http://[fe80::1%25%41%3a]/",
    "http://[::FFFF:1.2.3.4]/",
    "http://0x7f.1/",
    "http://2130706433/",
    "http://127.0.0.01/",
    "http://127.1/",
    "http://1.2.3.256/",
    "http://a_b.1/",
    "http://h./",
    "http://1.2.3.4./",
    "http://a!$&'()*+,;=~b/",
    # hosts the character rules rewrite, after lowercase-host (its edits come first)
    "http://h%41/",
    "http://xn--bcher-kva.ch%41/",
    "http://a b/",
    'HTTps://"www.MOBygaMEs.cOM:0443/x',
    "http://A%4a%zz%2eB<C>/",
    # authority-form and asterisk-form (RFC 9112 §3.2.3, §3.2.4)
    "127.0.0.1:8080",
    "[::1]:443",
    "1.2.3.4:0443",
    "*",
]
DECLINES = [
    "http://[v1.x]/",
    "http://bücher.ch/",
    "ftp://h/",
    "mailto:x@y",
    "http:/h",
    "http://",
    "h:443",
    "",
    "a/b",
]
# What the twin served once it no longer declined them (findings: invalid-ip-literal,
# invalid-port, overlong-utf8, double-encoding, percent-u, decoded-dot-segment-above-root,
# escaped-slash and backslash beside dot segments).
ENGAGES += [
    "http://[::1.2.3.04]/",
    "http://[::1%41]/",
    "http://[::1/",
    "http://[::1:80/",
    "http://u@[zz]:80/x",
    "http://[::1]x:80/",
    "http://A[b:x/",
    "http://h:a/",
    "http://h:80:80/",
    "http://h:8a/",
    "/%c0%af%C1%80%e0%80%af%f0%80%80%af",
    "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc",
    "/\udcc0\udcae\udcc0\udcae/x",
    "/%252e%252e/x",
    "/%u002e%u002e/x",
    "/%%32%65%%32%65/x",
    "/a/%25%32%65%25%32%65/%25%32%65%25%32%65/x",
    "/a%2f..%2fb",
    "/x/%2e%2e%5c%2e%2e%5cwin.ini",
    "/a/..\\..\\..\\x",
    "/../a\\b",
    "http://h/a\\b/../../c",
    "/static/\uff0e\uff0e/\uff0e\uff0e/web.config",
    "/x/%ef%bc%8e%EF%BC%8E/etc?%EF%BC%8F",
    "/a\\\ufe68b/\u2025;x/wait\u2026what/%EF%BC%85%32%65",
]
# A path that dot removal leaves starting with "//" gets the dot-prefix guard "/." (RFC 3986
# §4.2, §5.2.4), as driver._dot_prefix records it; "/.//a" is already guarded: left as it is.
ENGAGES += [
    "/a/..//b",
    "/.//..//etc/passwd",
    "/..//x",
    "/a//../..//b?q",
    "/.//a",
    "/%2E//a",
]

# Paths starting with "//", or that dot removal leaves so (RFC 3986 §5.2.4): the dot-prefix
# guard "/." where the reference writes one (§4.2), none where it does not ("/.//a" is guarded
# already; origin-form "//a" with no dot segment is a path as it is).
SLASH_TARGETS = [
    "//",
    "///",
    "//a",
    "//a/b",
    "//a?q",
    "//../etc/passwd",
    "//..//..//..//etc/passwd",
    "//..?q#f",
    "//a/./b",
    "//a/..",
    "//./a",
    "//.//a",
    "//%2e%2e/x",
    "/.//",
    "/.//a",
    "/.//a?q",
    "/.//..//etc/passwd",
    "/a//../..//b",
    "/a//../..//b?q#f",
    "/..//x",
    "/..//x?q",
    "/%2E%2E//x",
    "/a/..//b/..",
]


@needs_twin
@pytest.mark.parametrize("target", SLASH_TARGETS)
def test_twin_matches_reference_on_slash_paths(target: str) -> None:
    for policy in POLICIES.values():  # check_everywhere's loop (its event() is hypothesis's)
        for form in FORMS:
            check_twin(target, policy, form)
            check_canonicalize(target, policy, form)


@needs_twin
@pytest.mark.parametrize("target", [t for t in SLASH_TARGETS if t[:2] == "//"])
def test_twin_reads_origin_form_slashes_as_a_path(target: str) -> None:
    """Given as origin-form, "//a" is a path whose first segment is empty (RFC 9112 §3.2.1, as
    driver.py reads it): the twin serves it.  In auto and absolute form it is a network-path
    reference (RFC 3986 §4.2), the authority "a": declined, the reference's."""
    assert compiled.twin is not None
    assert check_twin(target, Policy(), "origin") is not None, compiled.declined()
    for form in ("auto", "absolute"):
        assert compiled.twin(target, twin_flags(Policy()), form) is None, form
        assert compiled.declined() == "scheme"
        check_canonicalize(target, Policy(), form)


# One example for every reason the twin gives when it declines (`_speedups.DECLINES`): the
# target, the policy and the form under which it declines with exactly that reason.
DECLINE_EXAMPLES: dict[str, tuple[str, Policy, str]] = {
    "form": ("/a", Policy(), "x"),
    "origin-form not starting with '/'": ("a/b", Policy(), "origin"),
    "scheme": ("HTTP://h/", Policy().with_rules("-lowercase-scheme"), "auto"),
    "no scheme '://' (relative, or another shape)": ("mailto:x@y", Policy(), "auto"),
    "scheme without a default port": ("ftp://h/", Policy(), "auto"),
    "numeric host with int() prefixes": (
        "http://1.0x0x1/",
        Policy().with_rules("+numeric-host"),
        "auto",
    ),
    "host with FOLD_AFTER edits in two passes": (
        "http://" + "Ab" * (FOLD_AFTER + 6) + "{/",
        Policy(),
        "auto",
    ),
    "empty host": ("http://:80/", Policy(), "auto"),
    "non-ASCII host (IDN)": ("http://bücher.ch/", Policy(), "auto"),
    "IPvFuture literal": ("http://[v1.x]/", Policy(), "auto"),
    "backslash, with a rule on them": ("/a\\b", Policy().with_rules("+backslash-as-slash"), "auto"),
    "escaped slash, with a rule on them": (
        "/a%2Fb",
        Policy().with_rules("+decode-escaped-slash"),
        "auto",
    ),
    "merge-slashes on '//'": ("/a//b", Policy().with_rules("+merge-slashes"), "auto"),
}


@needs_twin
@pytest.mark.parametrize("target", ENGAGES)
def test_twin_engages(target: str) -> None:
    explicit = "absolute" if "://" in target else "origin" if target[:1] == "/" else "auto"
    for form in ("auto", explicit):
        result = check_twin(target, Policy(), form)
        assert result is not None, f"the twin declined {target!r} (form={form})"
        assert canonicalize(target, form=form) == canonicalize_python(target, form=form)


@needs_twin
@pytest.mark.parametrize(
    ("target", "policy"),
    [
        ("HTTP://h/", Policy().with_rules("-lowercase-scheme")),
        ("http://h//a", Policy().with_rules("+merge-slashes")),
        ("/a//b", Policy().with_rules("+merge-slashes")),
        ("/a\\b", Policy().with_rules("+backslash-as-slash")),
        ("/a%2Fb", Policy().with_rules("+decode-escaped-slash")),
        ("/a%5cb", Policy().with_rules("+reject-escaped-slash")),
    ],
)
def test_twin_declines_under_policy(target: str, policy: Policy) -> None:
    assert compiled.twin is not None
    assert compiled.twin(target, twin_flags(policy), "auto") is None
    check_canonicalize(target, policy, "auto")


STRICT = Policy.profile("strict")


@needs_twin
@pytest.mark.parametrize(
    "target",
    ["/a b", "http://h/%", "http://[fe80::1%en0]/", "/é", "http://u%@h/", "http://a<b/", "/?%zz"],
)
def test_twin_raises_what_a_strict_policy_refuses(target: str) -> None:
    """A strict policy is served by the twin too: it raises the reference's InvalidTarget."""
    got = check_twin(target, STRICT, "auto")
    assert isinstance(got, tuple) and got[0] == "InvalidTarget", got
    check_canonicalize(target, STRICT, "auto")
    assert check_twin("HTTP://H:80/%7e/./a", STRICT, "auto") is not None  # no repair: served


CRAWLER = Policy.profile("crawler")


@needs_twin
@pytest.mark.parametrize(
    ("target", "policy", "url"),
    [
        ("/a?b=2&a=1#f", CRAWLER, "/a?a=1&b=2"),
        ("HTTP://H:80/a?utm_source=x&q=%7e#f", CRAWLER, "http://h/a?q=~"),
        ("/a?utm_source=x&fbclid=y", CRAWLER, "/a"),
        ("/a?", CRAWLER, "/a"),
        ("/a?#f", Policy().with_rules("+drop-empty-query"), "/a#f"),
        ("/a?b&a#x?z&y", Policy().with_rules("+sort-query"), "/a?a&b#x?z&y"),
        ("/a#x?z&y", Policy().with_rules("+sort-query"), "/a#x?z&y"),  # "?" only in the fragment
        ("/%C3%A9?b=%e9&a", CRAWLER, "/%C3%A9?a&b=%E9"),
    ],
)
def test_query_rules_run_after_the_twin(target: str, policy: Policy, url: str) -> None:
    """The crawler profile's query rules no longer send a target to the Python driver."""
    assert check_twin(target, policy, "auto") is not None, "the twin declined"
    result = canonicalize(target, policy)
    assert result == canonicalize_python(target, policy)
    assert result.url == url


@needs_twin
def test_declined_says_why() -> None:
    """bench/core.py's table of declines: the reason of the last call, None after a Result."""
    assert compiled.twin is not None and compiled.declined is not None
    flags = twin_flags(Policy())
    for target, why in [
        ("http://bücher.ch/", "non-ASCII host (IDN)"),
        ("http://[v1.x]/", "IPvFuture literal"),
        ("http://[v1.x]/x", "IPvFuture literal"),
        ("ftp://h/", "scheme without a default port"),
    ]:
        assert compiled.twin(target, flags, "auto") is None
        assert compiled.declined() == why, target
    assert compiled.twin("/a", flags, "auto") is not None
    assert compiled.declined() is None


@needs_twin
@pytest.mark.parametrize("target", DECLINES)
def test_twin_declines(target: str) -> None:
    assert compiled.twin is not None
    for policy in TWIN_POLICIES.values():
        for form in ("auto", "origin", "absolute"):  # as authority-form, "a:b" may be served
            assert compiled.twin(target, twin_flags(policy), form) is None, (target, policy, form)
    for policy in POLICIES.values():
        for form in FORMS:
            check_canonicalize(target, policy, form)


@needs_twin
def test_every_decline_reason_has_its_example() -> None:
    """What the twin still leaves to the Python driver is one table (`_speedups.DECLINES`),
    and each reason in it is a class of target this file can show."""
    from urlsan.core import _speedups

    assert len(set(_speedups.DECLINES)) == len(_speedups.DECLINES)
    assert set(DECLINE_EXAMPLES) == set(_speedups.DECLINES)


@needs_twin
@pytest.mark.parametrize("why", sorted(DECLINE_EXAMPLES))
def test_twin_declines_with_its_reason(why: str) -> None:
    assert compiled.twin is not None and compiled.declined is not None
    target, policy, form = DECLINE_EXAMPLES[why]
    assert compiled.twin(target, twin_flags(policy), form) is None
    assert compiled.declined() == why
    if form in FORMS:
        check_canonicalize(target, policy, form)


SPEEDUPS_C = Path(__file__).parents[2] / "core" / "_speedups.c"


def test_no_decline_reason_outside_the_table() -> None:
    """The C source gives no reason but the DECLINES table's (read, not run: this holds without
    the twin too)."""
    if not SPEEDUPS_C.exists():  # .ci/check-dist runs the tests against a wheel, no source
        pytest.skip("the C source is not beside the tests: an installed wheel's run")
    source = SPEEDUPS_C.read_text(encoding="utf-8")
    calls = re.findall(r"\bdecline\(st, ([^)]*)\)", source)
    assert calls, "no decline() call found: the test no longer reads the twin"
    assert all(re.fullmatch(r"D_[A-Z0-9_]+", why) for why in calls), calls
    table = re.search(r"DECLINES\[D_COUNT\] = \{(.*?)\n\};", source, re.DOTALL)
    assert table is not None
    reasons = re.findall(r'\[(D_\w+)\] = "((?:[^"\\]|\\.)*)"', table.group(1))
    assert sorted(why.replace("\\\\", "\\") for _, why in reasons) == sorted(DECLINE_EXAMPLES)
    assert {name for name, _ in reasons} >= set(calls)


def _finding_examples() -> list[tuple[str, str, str]]:
    try:
        from test_findings import CASES  # tests/core is on sys.path (no __init__.py there)
    except ImportError:  # imported as tests.core.test_speedups, by tests/integrations
        from tests.core.test_findings import CASES

    examples = [(target, name, "auto") for target, name, *_ in CASES]
    evasions = json.loads((Path(__file__).parent / "evasions.json").read_text(encoding="utf-8"))
    # The evasion corpus holds request-targets: each in the form the proxy gives it, as
    # test_evasions.checked reads it.  A target starting with "/" is origin-form (RFC 9112
    # §3.2.1), so that "//../etc/passwd" is a path there, not the authority ".." that "auto"
    # reads (RFC 3986 §4.2); for one starting with a single "/" the two forms are the same.
    return examples + [
        (case["target"], case["finding"], "origin" if case["target"][:1] == "/" else "auto")
        for case in evasions
    ]


# What the twin still declines among the findings' examples: an IDN host is the idna package's
# (UTS #46).
LEFT_TO_PYTHON = {"non-ASCII host (IDN)"}


@needs_twin
@pytest.mark.parametrize(("target", "finding", "form"), _finding_examples())
def test_twin_serves_every_finding_kinds_examples(target: str, finding: str, form: str) -> None:
    """A finding written in one twin only sends its URLs to the slow path: the twin serves the
    examples of every finding kind, under the default and the crawler profiles."""
    assert compiled.twin is not None and compiled.declined is not None
    for policy in (Policy(), Policy.profile("crawler")):
        result = check_twin(target, policy, form)
        if result is None:
            assert compiled.declined() in LEFT_TO_PYTHON, (target, compiled.declined())
        elif policy == Policy():  # the crawler's strip-fragment drops a fragment's findings
            assert isinstance(result, Result) and finding in {f.rule for f in result.findings}


# --- replay of the data files we did not write (tests/data/SOURCES.md)


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included; latin-1 bytes as their surrogateescape text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        if set(value) == {"$bytes_latin1"}:
            raw = value["$bytes_latin1"].encode("latin-1")
            yield raw.decode("utf-8", "surrogateescape")
            return
        for key, item in value.items():
            if key in ("tests", "description", "source", "comment", "func"):
                continue
            yield key
            yield from _strings(item)


def _data_inputs(name: str) -> list[str]:
    path = DATA / name
    if path.parent.name == "fuzz":
        raw = path.read_bytes()
        return [raw.decode("utf-8", "surrogateescape"), raw[1:].decode("utf-8", "surrogateescape")]
    if path.parent.name == "urlcanon":  # read as latin-1 bytes, as upstream does
        found = list(_strings(json.loads(path.read_bytes().decode("latin-1"))))
        found = [s.encode("latin-1", "replace").decode("utf-8", "surrogateescape") for s in found]
        return sorted(
            {*found, *(f"http://h{s}" if s[:1] == "/" else f"http://{s}/" for s in found)}
        )
    if path.suffix == ".txt":  # one request-target a line: as sent, and as a URL of a host
        lines = path.read_text(encoding="utf-8").splitlines()
        return sorted({*lines, *(f"http://h{s}" for s in lines)})
    return sorted(set(_strings(json.loads(path.read_text(encoding="utf-8")))))


DATA_FILES = sorted(
    str(p.relative_to(DATA))
    for p in DATA.rglob("*")
    if p.is_file() and p.name not in ("SOURCES.md", "README.md")
)


@needs_twin
@pytest.mark.parametrize("name", DATA_FILES)
def test_twin_matches_reference_on_data_files(name: str) -> None:
    inputs = _data_inputs(name)
    assert inputs, name
    failures: list[str] = []
    handled = 0
    for target in inputs:
        try:
            for policy in POLICIES.values():
                for form in FORMS:
                    handled += check_twin(target, policy, form) is not None
                    check_canonicalize(target, policy, form)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} of {len(inputs)} inputs differ:\n" + "\n".join(
        failures[:10]
    )
    if name == "urltestdata.json":
        assert handled > 1000, handled  # the replay does exercise the twin


# --- long inputs: linear buffers, merged edits, counted findings

UNITS = ["%", "../", "%41", "é", "\udcff", "a/", "./", "%7e", " ", "%%41", "😀", "..;/"]
UNITS += ["%00", "\x01%", "%00%0d", "%2e%2E/", "%25", "%u0041", "%c0%af", "\\"]
LONG = 100_000
# The reference takes ~50 ms on such a target: a few policies, chosen to differ where it matters.
LONG_POLICIES = [
    POLICIES[name]
    for name in (
        "Policy()",
        "profile:rfc2396",
        "profile:crawler",
        "-decode-unreserved,-uppercase-escape",
        "-remove-dot-segments",
    )
]


@needs_twin
@pytest.mark.parametrize("unit", UNITS)
def test_twin_matches_reference_on_long_inputs(unit: str) -> None:
    body = unit * (LONG // len(unit))
    half = body[: len(body) // 2]
    targets = {
        "path": "/" + body,
        "query": "/?" + body,
        "both": "HTTP://Example.COM:0080/" + half + "?" + half + "#" + body[:100],
    }
    for where, target in targets.items():
        assert check_twin(target, Policy(), "auto") is not None, (unit, where)
        for policy in LONG_POLICIES[1:]:
            check_twin(target, policy, "auto")


# --- the edit fold (issue #13): past FOLD_AFTER edits, a component's character edits fold

FOLD_UNITS = ["\x01%", "a%", "%41%", "é\x01", "%7e%2f", "%zz%41", " a", "%00%0d", "\udcff%41b"]


def character_edits(result: Result) -> dict[str, list[Edit]]:
    """Each component's character edits (those whose rules are all character rules)."""
    chars = {"decode-unreserved", "uppercase-escape", "encode-stray-percent", "encode-unsafe"}
    chars |= {"encode-non-ascii", "lowercase-host"}
    found: dict[str, list[Edit]] = {}
    for edit in result.edits:
        if set(edit.rules) <= chars:
            found.setdefault(edit.component, []).append(edit)
    return found


@needs_twin
@pytest.mark.parametrize("unit", FOLD_UNITS)
def test_twin_folds_as_the_reference(unit: str) -> None:
    """Many rewrites per component, of alternating rules or apart: the twin folds them where
    the reference does, into at most FOLD_AFTER edits per component that keep the invariants."""
    body = unit * (3 * FOLD_AFTER)
    targets = [
        "/" + body + "?" + body + "#" + body,
        "HTTP://A_B_" + "C_d_" * (2 * FOLD_AFTER) + ".example/" + body,
        "/?" + body[: FOLD_AFTER // 2] + "x" * 10 + body,
    ]
    for target in targets:
        for policy in POLICIES.values():
            got = check_twin(target, policy, "auto")
            if not isinstance(got, Result):  # declined, or refused by a strict policy
                continue
            for component, edits in character_edits(got).items():
                assert len(edits) <= FOLD_AFTER, (component, len(edits))
                for edit in edits:
                    assert target[edit.start : edit.end] == edit.before, edit
            assert [e.start for e in got.edits] == sorted(e.start for e in got.edits)
    folded = compiled.twin and compiled.twin("/" + body, twin_flags(Policy()), "auto")
    assert folded is not None and len(folded.edits) <= FOLD_AFTER


@needs_twin
@given(
    pieces=st.lists(TAME_PIECE, min_size=FOLD_AFTER, max_size=3 * FOLD_AFTER),
    where=st.sampled_from(["/", "/?", "/#", "http://h/", "http://h/a?b#"]),
)
def test_twin_folds_like_the_reference_on_many_rewrites(pieces: list[str], where: str) -> None:
    check_everywhere(where + "".join(pieces))


# --- the findings that look at what decoding makes of a target: the twin reports them or
# hands the target to the reference, and never reports otherwise

EVASION_PIECE = st.sampled_from(
    [
        "/",
        "\\",
        "%2f",
        "%5C",
        ".",
        "%2e",
        "%2E",
        "..",
        "a",
        ";",
        "%25",
        "%",
        "%32",
        "%65",
        "%c0",
        "%ae",
        "%AF",
        "%e0%80",
        "%E2%80%AE",
        "%C3%A9",
        "%ff",
        " ",
        "\x01",
        "\x85",
        "\u202e",
        "%u002e",
        "%u0041",
        "?",
        "#",
        "é",
        "\udcc0",
        "\udcae",
        "\udcff",
        "%00",
        "%0d",
        "5c",
        "e",
    ]
)


@needs_twin
@given(
    pieces=st.lists(EVASION_PIECE, max_size=12), where=st.sampled_from(["/", "http://h/", "/a?"])
)
@example(pieces=["..", "%2f", "..", "%2f", ".."], where="/")
@example(pieces=["a", "\\", "..", "/", "..", "/", "..", "/", "b"], where="/")
@example(pieces=["a", "\\", "..", ";", "x"], where="/")
@example(pieces=["%", "%32", "%65", "%", "%32", "%65"], where="/")
def test_twin_matches_the_reference_on_evasions(pieces: list[str], where: str) -> None:
    target = where + "".join(pieces)
    for policy in (Policy(), Policy.profile("crawler")):
        check_twin(target, policy, "auto")


@needs_twin
def test_kept_results_are_not_walked_by_the_cyclic_collector() -> None:
    """A caller that keeps its Results (a frontier, a list of them) must not pay a full
    collection's walk over each of them again and again: the twin's Results, edits and findings
    hold only strs, ints and tuples of them, so the collector need not track them."""
    targets = [f"HTTP://Example.COM:80/%7e{i}/./a b/../c?q=%41#%e2%80%ae" for i in range(2000)]
    gc.collect()
    before = len(gc.get_objects())
    kept = [canonicalize(t) for t in targets]
    assert all(r.edits and r.findings for r in kept)
    assert len(gc.get_objects()) - before < len(targets) // 10
    for r in kept[:50]:
        assert not gc.is_tracked(r)
        assert not any(gc.is_tracked(x) for x in (r.edits, r.findings, *r.edits, *r.findings))
    # The collector's view changes nothing a caller sees: values as the reference makes them.
    assert kept[7] == canonicalize_python(targets[7], Policy())


# decoded-dot-segment-above-root: each "." that a decode makes comes from a run of escape
# characters holding a dot source of its own ("." "%" or a raw byte); the twin decodes only a
# path with a run holding two of them (_speedups.c, may_decode_dotdot).  A ".." a decode makes,
# from every kind of source, and paths a trick marks whose decodes make no "..".
DECODED_CLIMBS = [
    "/%252e%252e/x",
    "/%%32%65%%32%65/x",
    "/%c0%ae%c0%ae/x",
    "/%u002e%u002e/x",
    "/%25u002e%25u002e/x",
    "/.%252e/x",
    "/%252e./x",
    "/%c0%ae\udcc0\udcae/x",
    "/%e0%80%ae%e0%80%ae/x",
    "/a%2f%252e%252e%2f%252e%252e/x",
    "/a/%2e%2E/%252e%252e/x",  # "%2E" read as "." before any decode, then a decode's ".."
]
NO_DECODED_CLIMB = [
    "/a\\..\\..\\x",  # it climbs raw: dot-segment-above-root
    "/\udcc0\udcae\udcc0\udcae/x",  # raw bytes mark no trick: no decode is looked at
    "/a\\b/c",
    "/a%2fb/c.d",
    "/a%252eb/c",
    "/%252e/x",
    "/x.%2f.y",
    "/a/%c0%ae/b",
    "/\udcc0\udcae/x",
    "/a/.%2E/%2e./%25",  # it climbs before any decode: dot-segment-above-root
    "/a/%2e/b/%2E%2e/%2e%2e%2e/%252e%252e/%252e%252e/x",  # "..." is no dot segment
]


@needs_twin
@pytest.mark.parametrize("path", DECODED_CLIMBS + NO_DECODED_CLIMB)
def test_twin_finds_the_climbs_decodes_make_as_the_reference(path: str) -> None:
    for where in ("", "http://h"):
        check_twin(where + path, Policy(), "auto")
    found = {f.rule for f in canonicalize(path).findings}
    assert ("decoded-dot-segment-above-root" in found) == (path in DECODED_CLIMBS)
