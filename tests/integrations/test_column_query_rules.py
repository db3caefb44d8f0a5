"""The query rules in the compiled column loop (core/_columns.c): drop-params, sort-query and
drop-empty-query run on the twin's canonical URL in C when the policy's parameter specs are
plain patterns (urlsan._columns.query_spec), and give what the pure-Python driver gives, under
every rule set, drop and keep specs (scoped by host or not), on generated and real queries."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow", reason="the Arrow columns come with the duckdb extra")

from tests.integrations.test_arrow_columns import (  # noqa: E402
    needs_twin,
    reference_result,
    reference_urls,
)
from urlsan import _columns  # noqa: E402
from urlsan._columns import arrow_result, arrow_urls, column_twin, query_spec  # noqa: E402
from urlsan.core import Policy  # noqa: E402
from urlsan.core.policy import PROFILES, REQUIRED_RULES, RULE_NAMES  # noqa: E402

DATA = Path(__file__).parents[1] / "data"

# Names as a crawl meets them: the crawler profile's tracking and session parameters in either
# case and escaped ("utm%5Fsource" is "utm_source" only once decode-unreserved decoded it), a
# "+", an escaped space, an empty name, names that sort before and after them.
NAMES = [
    "utm_source", "UTM_Medium", "utm%5Fsource", "utm%5fcampaign", "Utm_", "utm", "gclid",
    "GCLID", "fbclid", "_ga", "_gl", "sid", "SID", "sessionid", "session_id", "PHPSESSID",
    "jsessionid", "aspsessionidABCD", "ASPSESSIONID", "cfid", "cftoken", "zenid", "a", "b",
    "B", "a+b", "a%20b", "", "ref", "Ref", "src", "src_x", "id", "ID", "page", "q", "x.y",
    "%41", "~", "z",
]  # fmt: skip
VALUES = ["", "1", "x", "a=b", "1+2", "%2B", "A%26B", "é", "x y"]

# Specs of every kind: exact names, "*" and "?" patterns, an allowlist, scoped to a host and
# below it, scoped to every host ("*"), an IP-literal host and a character class (which the
# loop leaves to Python), a pattern that matches the empty name.
DROP_SPECS = [
    "ref", "src*", "example.com:ref,Src*", "*.example.com:q", "s?d", "*", "x*y", "a+b",
    "utm%5f*", "shop.example:id", "*:page", "[::1]:debug", "[ab]", "other.shop.example.:z",
    "h:b", "?",
]  # fmt: skip
KEEP_SPECS = ["shop.example:id,page", "h:a,b*", "example.org:q", "*:q", "id"]

HOSTS = [
    "http://example.com", "https://www.Example.COM:443", "http://shop.example",
    "http://other.shop.example.", "http://h", "http://[::1]:8080", "http://1.2.3.4",
    "HTTP://U:P@Example.COM:0080", "",
]  # fmt: skip
PATHS = [
    "/", "/a", "/a/../b", "/p;x=1", "/p;jsessionid=A1/../q", "/a/..;/b", "/;sid=2/x",
    "/a;b;c=d/e", "/%7e/x", "/a\\b", "/a;%73id=1", "/a;utm%5Fx=1", "/a b",
]  # fmt: skip
FRAGMENTS = ["", "#", "#f", "#f?x=1&a", "#%7e x"]


@st.composite
def queries(draw: st.DrawFn) -> str:
    pairs = draw(
        st.lists(
            st.tuples(
                st.one_of(st.sampled_from(NAMES), st.text("abcAB_%5f=+&", max_size=4)),
                st.one_of(st.none(), st.sampled_from(VALUES)),
            ),
            max_size=7,
        )
    )
    return "&".join(name if value is None else f"{name}={value}" for name, value in pairs)


@st.composite
def urls(draw: st.DrawFn) -> str:
    query = draw(st.one_of(st.none(), queries()))
    return (
        draw(st.sampled_from(HOSTS))
        + draw(st.sampled_from(PATHS))
        + ("" if query is None else "?" + query)
        + draw(st.sampled_from(FRAGMENTS))
    )


QUERY_RULES = ("drop-params", "sort-query", "drop-empty-query")


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    """A profile with the query rules (and decode-unreserved, which decides whether an escaped
    name matches) switched on or off, and drop and keep specs added or not."""
    name = draw(st.sampled_from(sorted(PROFILES)))
    policy = Policy.profile(name)
    optional = [r for r in RULE_NAMES if r not in REQUIRED_RULES]
    switched = draw(st.sets(st.sampled_from([*QUERY_RULES, "decode-unreserved"])))
    rules = set(policy.rules) ^ (switched & set(optional))
    policy = Policy(
        rules=frozenset(rules),
        name=policy.name,
        strict=policy.strict,
        unreserved_2396=policy.unreserved_2396,
    )
    drop = draw(st.lists(st.sampled_from(DROP_SPECS), max_size=3))
    keep = draw(st.lists(st.sampled_from(KEEP_SPECS), max_size=2))
    if drop or keep:
        policy = policy.with_params(drop, keep)
        if draw(st.booleans()):  # with_params switches drop-params on: off again, now and then
            policy = policy.with_rules("-drop-params")
    return policy


def check(rows: list[str | None], policy: Policy) -> None:
    column = pa.array(rows, pa.large_string())
    assert arrow_urls(column, policy).to_pylist() == reference_urls(rows, policy)
    assert arrow_result(column, policy).to_pylist() == reference_result(rows, policy)


CRAWLER = Policy.profile("crawler")
SCOPED = CRAWLER.with_params(drop="example.com:ref,Src*;*:page", keep="shop.example:id,page")


@needs_twin
@settings(max_examples=300, deadline=None)
@given(rows=st.lists(urls(), min_size=1, max_size=8), policy=policies())
@example(rows=["http://h/?utm%5Fsource=1&b&a"], policy=CRAWLER)
@example(rows=["http://h/?utm%5Fsource=1&b&a"], policy=CRAWLER.with_rules("-decode-unreserved"))
@example(rows=["http://h/?&sid=1", "http://h/?", "http://h/?&", "/?a&&b"], policy=CRAWLER)
@example(rows=["http://h/a/..;/b?b=1&a=2", "/;sid=2/x?z&y"], policy=CRAWLER)
@example(rows=["http://shop.example/p?ID=1&x&page=2#f"], policy=SCOPED)
@example(rows=["http://h/?a&b=1&a=0&=&b"], policy=CRAWLER.with_params(drop="?"))
def test_the_loop_runs_the_query_rules_as_the_reference(
    rows: list[str | None], policy: Policy
) -> None:
    check(rows, policy)


@needs_twin
@pytest.mark.parametrize(
    "policy",
    [CRAWLER, SCOPED, CRAWLER.with_params(keep="id,page"), CRAWLER.with_params(drop="[::1]:x")],
    ids=["crawler", "scoped", "allowlist", "class (Python)"],
)
def test_real_queries_with_tracking_parameters_spliced_in(policy: Policy) -> None:
    paths = [p for p in (DATA / "real-paths.txt").read_text(encoding="utf-8").splitlines()]
    queried = [p for p in paths if "?" in p]
    tracking = ["utm_source=news", "gclid=EAIa", "sid=9", "PHPSESSID=ab", "fbclid=x"]
    rows: list[str | None] = []
    for k, path in enumerate(queried):
        rows.append(path)
        rows.append(f"http://www.example.com{path}")
        spliced = path.replace("?", f"?{tracking[k % len(tracking)]}&", 1)
        rows.append(f"https://shop.example{spliced}#top")
    check(rows, policy)


def test_the_specs_the_loop_matches_and_those_it_leaves_to_python() -> None:
    assert query_spec(CRAWLER) is not None
    assert query_spec(SCOPED) is not None
    # fnmatch reads "[::1]" as a class of ":" and "1", and a regex folds non-ASCII characters
    # onto ASCII ones without regard to case: such specs stay Python's.
    assert query_spec(CRAWLER.with_params(drop="[::1]:debug")) is None
    assert query_spec(CRAWLER.with_params(drop="se[s]sion")) is None
    assert query_spec(CRAWLER.with_params(drop="\u017fid")) is None


@needs_twin
def test_plain_specs_make_no_python_call_for_the_query_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    twin = column_twin(CRAWLER)
    assert twin is not None and twin[4] is not None
    calls: list[str] = []

    def counted(url: str, *args: object) -> object:
        calls.append(url)
        raise AssertionError("the query rules ran in Python")

    monkeypatch.setattr(_columns, "column_twin", lambda _: (*twin[:2], counted, *twin[3:]))
    rows = ["http://h/p?utm_source=1&b=2&a=1#x", "http://h/a/..;/b?", "/x?sid=1"]
    assert arrow_urls(pa.array(rows), CRAWLER).to_pylist() == reference_urls(rows, CRAWLER)
    assert calls == []
