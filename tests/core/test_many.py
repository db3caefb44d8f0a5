"""Many URLs at once (core/many.py): the batch CLI's and the data-frame integrations' loops.

What a user relies on: ``many.urls`` and ``many.columns`` answer exactly what a ``for`` loop over
`canonicalize` answers (their Python reference, `_urls` and `_columns`), whether the loop runs
in C (the compiled twin's ``urls``/``columns``) or in Python; ``urls`` stops before the first
text that is blank or raises, so that the caller can say why; ``columns`` turns a refusal into a
row, lets any other exception through, and leaves the garbage collector as it found it.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from urlsan.core import InvalidTarget, Policy, canonicalize, compiled, many
from urlsan.core.policy import PROFILES

DATA = Path(__file__).parents[1] / "data"
POLICIES = [Policy.profile(name) for name in PROFILES] + [
    Policy().with_rules("+reject-escaped-slash"),
    Policy.profile("crawler").with_params(drop=("example.com:ref",), keep=()),
]
FORMS = ("auto", "origin", "absolute", "authority", "asterisk")
BLANKS = " \t\r\n\x0b\x0c"

compiled_loops = pytest.mark.skipif(
    many._urls_in_c is None, reason="urlsan.core._speedups is not built: only the Python loops"
)


def corpus() -> list[str]:
    """WHATWG's inputs (valid and invalid, all kinds) and hostile shapes: enough to send URLs
    down every path, twin, Python fallback and refusal."""
    tests = json.loads((DATA / "urltestdata.json").read_text(encoding="utf-8"))
    inputs = [t["input"] for t in tests if isinstance(t, dict)]
    return [*inputs, "/a b", "HTTP://A/%7e", "/%2Fx", "http://[::1/", "\x01%" * 100, " \t"]


TEXTS = corpus()


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name or "custom")
def test_columns_is_the_loop(policy: Policy) -> None:
    values: list[object] = [*TEXTS, None, float("nan"), 3, b"http://a/", "  http://A/  "]
    assert many.columns(values, policy) == many._columns(values, policy)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name or "custom")
@pytest.mark.parametrize("form", FORMS)
def test_urls_is_the_loop(policy: Policy, form: str) -> None:
    texts = [t for t in TEXTS if t.strip(BLANKS)]
    got = many.urls(texts, policy, form, BLANKS)
    assert got == many._urls(texts, policy, form, BLANKS)
    # It stops exactly where canonicalize first raises, and nowhere before.
    for text, url in zip(texts, got, strict=False):
        assert canonicalize(text.strip(BLANKS), policy, form=form).url == url
    if len(got) < len(texts):
        with pytest.raises(InvalidTarget):
            canonicalize(texts[len(got)].strip(BLANKS), policy, form=form)


def test_urls_stops_at_a_blank_line_or_a_non_str() -> None:
    assert many.urls(["/a", "\t \r", "/b"], Policy(), "auto", BLANKS) == ["/a"]
    # By default a text line's white space goes: a CR LF line end too.
    assert many.urls(["/a\r\n", " /b\x0c"], Policy()) == ["/a", "/b"]
    assert many.urls(["/a", None, "/b"], Policy(), "auto", BLANKS) == ["/a"]  # type: ignore[list-item]
    # and before a text longer than ``longest`` characters, blanks included
    for loop in (many.urls, many._urls):
        assert loop(["/a", "/bcd", "/e"], Policy(), "auto", BLANKS, 3) == ["/a"]
        assert loop(["/ab ", "/e"], Policy(), "auto", BLANKS, 3) == []


def test_columns_rows() -> None:
    urls, changed, rules = many.columns(
        ["HTTP://A/%7e ", None, "", "http://a/", "http://a/b c"], Policy.profile("strict")
    )
    assert urls == ["http://a/~", None, None, "http://a/", None]
    assert changed == [True, None, None, False, False]
    assert rules == [["lowercase-scheme", "lowercase-host", "decode-unreserved"], None, None, [],
                     ["encode-unsafe"]]  # fmt: skip


def test_columns_leaves_the_collector_as_it_was() -> None:
    assert gc.isenabled()
    many.columns(["http://a/"] * 3, Policy())
    assert gc.isenabled()
    gc.disable()
    try:
        many.columns(["http://a/"] * 3, Policy())
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_columns_lets_other_errors_through() -> None:
    with pytest.raises(ValueError, match="unknown profile"):
        many.columns(["http://a/"], "no-such-profile")  # type: ignore[arg-type]
    assert gc.isenabled()


@compiled_loops
def test_the_compiled_loops_are_in_use() -> None:
    """Not quietly the Python loop: the C functions take the C entry itself."""
    assert compiled.urls is not None and compiled.columns is not None
    with pytest.raises(TypeError):
        compiled.columns(len, [], Policy())


@given(
    st.lists(st.one_of(st.none(), st.text(max_size=40), st.from_regex(r"[ -~]{0,40}")), max_size=20)
)
def test_any_values(values: list[object]) -> None:
    for policy in (Policy(), Policy.profile("crawler"), Policy.profile("strict")):
        assert many.columns(values, policy) == many._columns(values, policy)
        texts = [v for v in values if isinstance(v, str)]
        assert many.urls(texts, policy, "auto", BLANKS) == many._urls(texts, policy, "auto", BLANKS)
