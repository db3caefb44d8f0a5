"""The url and SURT columns of a pyarrow string column (urlsan._columns.arrow_urls,
arrow_surt_keys), which DuckDB and Polars hand urlsan: the same values as the list path, for
nulls, blanks, refused URLs, slices, chunks and both offset widths; and the compiled twin run
straight from the column's buffer (core/_twin.h) equal to the reference driver."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow", reason="the Arrow columns come with the duckdb extra")

from tests.core.test_speedups import TARGETS, any_policy  # noqa: E402
from urlsan import _columns  # noqa: E402
from urlsan._columns import (  # noqa: E402
    arrow_result,
    arrow_surt_keys,
    arrow_urls,
    build_policy,
    canonical_urls,
    columns,
    surt_keys,
)
from urlsan.core import InvalidTarget, Policy, compiled, many  # noqa: E402
from urlsan.core.canonical import ascii_twin, canonicalize_python  # noqa: E402

ROWS = [
    "http://Example.COM/a/./b/../c?b=2&a=1#frag",
    None,
    "",
    "  \t",
    " http://example.com/%7euser \n",
    "http://example.com/caf\u00e9/\u65e5\u672c",
    "http://www.Archive.org:80/index.html?b=2&a=1",
    "http://example.com:99999/",  # no SURT key (port), a URL for canonicalize
    "/a%2Fb",  # refused by reject-escaped-slash
    "mailto:someone@example.com",
]


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view"])
@pytest.mark.parametrize("rules", ["", "+reject-escaped-slash"])
def test_arrow_urls_equal_the_list_path(kind: str, rules: str) -> None:
    if not hasattr(pa, kind):
        pytest.skip(f"pyarrow {pa.__version__} has no {kind} (16 and later have)")
    policy = build_policy("crawler", rules)
    column = pa.array(ROWS, getattr(pa, kind)())
    got = arrow_urls(column, policy)
    assert got.type == pa.large_string()
    assert got.to_pylist() == canonical_urls(ROWS, policy)
    if rules:
        assert got[8].as_py() is None  # the refused URL: null, as in the list path


@pytest.mark.parametrize("profile", ["ia", "urlsan"])
def test_arrow_surt_keys_equal_the_list_path(profile: str) -> None:
    got = arrow_surt_keys(pa.array(ROWS), profile)
    assert got.to_pylist() == surt_keys(ROWS, profile)
    if profile == "ia":
        assert got[6].as_py() == "org,archive)/index.html?a=1&b=2"
        assert got[7].as_py() is None


def test_slices_and_chunks() -> None:
    policy = build_policy("crawler")
    column = pa.array(ROWS * 3)
    for start, stop in ((1, 5), (3, 17), (9, 30), (0, 0)):
        piece = column.slice(start, stop - start)
        assert arrow_urls(piece, policy).to_pylist() == canonical_urls(ROWS * 3, policy)[start:stop]
    chunked = pa.chunked_array([column.slice(0, 7), column.slice(7, 0), column.slice(7)])
    assert arrow_urls(chunked, policy).to_pylist() == canonical_urls(ROWS * 3, policy)
    assert arrow_urls(pa.chunked_array([], pa.string()), policy).to_pylist() == []


def test_a_bug_in_a_row_is_raised_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str, with_scheme: bool = False) -> str:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_columns, "ia_key", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        arrow_surt_keys(pa.array(["http://example.com/"]))


@pytest.mark.skipif(
    bool(os.environ.get("URLSAN_NO_EXTENSIONS")), reason="the pure-Python path: lists"
)
def test_the_compiled_loop_is_built_where_the_twin_is() -> None:
    from urlsan.core import compiled

    if compiled.twin is None:
        pytest.skip("built without a C compiler")
    assert _columns._map_strings is not None


# --- the twin straight from the column's buffer (core/_twin.h): equal to the reference driver

DATA = Path(__file__).parents[1] / "data"
needs_twin = pytest.mark.skipif(
    compiled.twin is None or _columns._map_strings is None,
    reason="urlsan.core._speedups and _columns are not built (no C compiler, or "
    "URLSAN_NO_EXTENSIONS set)",
)


def reference_urls(rows: list[str | None], policy: Policy) -> list[str | None]:
    """What the url column must hold: the pure-Python driver's URL of each stripped row; null
    for a null, a blank, and a URL the policy refuses."""
    out: list[str | None] = []
    for row in rows:
        text = row.strip(many.BLANKS) if row is not None else ""
        try:
            out.append(canonicalize_python(text, policy).url if text else None)
        except InvalidTarget:
            out.append(None)
    return out


# Every kind of parameter spec: scoped to a host and below it, an allowlist on another, an
# IP-literal host; the crawler profile's defaults besides.
SCOPED = Policy.profile("crawler").with_params(
    drop="example.com:ref,Src*;[::1]:debug", keep="shop.example:id,page"
)
QUERIES = [
    "http://www.example.com/a?ref=1&q=2&src_x=3&utm_source=4",
    "http://example.org/a?ref=1&q=2&utm_source=4",
    "http://[::1]:80/?debug=1&z&a",
    "http://shop.example/p?id=1&x=2&PAGE=3&gclid=4",
    "http://other.shop.example./p/../q?b=&a=#f?x",
    "/only/a/path?ref=1&b&a&",
    "http://h/p?a=1;b=2&sid=3",  # a ";" in the query: the twin's, with the query rules
    "http://h/p;jsessionid=A1/../q?PHPSESSID=x&item=3",  # a path parameter: the reference's
    "http://h/?",
    "http://h/?utm_a=1",
    "HTTP://U:P@Example.COM:0080/%7e/?%62=1&a#x",
    "http://h/caf\u00e9?b&a",  # not ASCII: the Python call
]


@needs_twin
@pytest.mark.parametrize(
    "policy",
    [SCOPED, *(Policy.profile(name) for name in ("crawler", "rfc3986", "rfc2396", "strict"))],
    ids=["scoped", "crawler", "rfc3986", "rfc2396", "strict"],
)
def test_the_twin_from_the_buffer_equals_the_reference(policy: Policy) -> None:
    real = (DATA / "real-paths.txt").read_text(encoding="utf-8").splitlines()
    rows: list[str | None] = [*QUERIES, *real[:1500], *ROWS]
    got = arrow_urls(pa.array(rows, pa.large_string()), policy).to_pylist()
    assert got == reference_urls(rows, policy)


@needs_twin
@given(rows=st.lists(TARGETS, max_size=6), policy=any_policy())
def test_the_twin_from_the_buffer_equals_the_reference_under_any_rule_set(
    rows: list[str], policy: Policy
) -> None:
    rows = [row for row in rows if not any("\ud800" <= c <= "\udfff" for c in row)]  # UTF-8
    got = arrow_urls(pa.array(rows, pa.string()), policy).to_pylist()
    assert got == reference_urls(list(rows), policy)


@needs_twin
def test_the_switch_sets_the_twin_aside_for_the_columns_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = Policy.profile("crawler")
    assert ascii_twin(policy) is not None
    monkeypatch.setattr(compiled, "twin", None)
    assert ascii_twin(policy) is None
    assert _columns.column_twin(policy) is None
    got = arrow_urls(pa.array(QUERIES), policy).to_pylist()
    assert got == reference_urls(QUERIES, policy)


def reference_result(rows: list[str | None], policy: Policy) -> list[dict[str, object]]:
    """What the result struct must hold: the reference driver's url, whether it differs from
    the stripped row, and its edits' rules, each once in order; a refused row keeps changed
    false and the refusing rule; a null or blank row is null in all three."""
    out: list[dict[str, object]] = []
    for row in rows:
        text = row.strip(many.BLANKS) if row is not None else ""
        if not text:
            out.append({"url": None, "changed": None, "rules": None})
            continue
        try:
            r = canonicalize_python(text, policy)
        except InvalidTarget as e:
            out.append({"url": None, "changed": False, "rules": [e.rule]})
            continue
        rules = list(dict.fromkeys(edit.rule for edit in r.edits))
        out.append({"url": r.url, "changed": r.url != text, "rules": rules})
    return out


@pytest.mark.parametrize(
    "policy",
    [SCOPED, *(Policy.profile(name) for name in ("crawler", "rfc3986", "strict"))],
    ids=["scoped", "crawler", "rfc3986", "strict"],
)
def test_the_result_columns_equal_the_reference(policy: Policy) -> None:
    real = (DATA / "real-paths.txt").read_text(encoding="utf-8").splitlines()
    # "/.//a": rewritten and written back as it was (changed false, two rules); "/..//x": dot
    # removal leaves "//x", which gets the dot-prefix guard "/." (RFC 3986 §4.2); a fragment's
    # edits after the query rules'; a folded edit (more than 64 rewrites in one component).
    more = [
        "/.//a",
        "/..//x",
        "/.//..//etc/passwd?q",
        "http://h/?b&a#%7e x",
        "http://h/" + "%7e" * 70 + "\x01" * 3,
    ]
    rows: list[str | None] = [*QUERIES, *more, *real[:1500], *ROWS]
    got = arrow_result(pa.array(rows, pa.large_string()), policy)
    assert got.type.names == ["url", "changed", "rules"]
    assert got.to_pylist() == reference_result(rows, policy)
    urls, changed, rules = columns(rows, policy)
    assert got.to_pylist() == [
        {"url": u, "changed": c, "rules": r} for u, c, r in zip(urls, changed, rules, strict=True)
    ]
    chunked = pa.chunked_array([pa.array(rows[:7]), pa.array(rows[7:])])
    assert arrow_result(chunked, policy).to_pylist() == got.to_pylist()


@given(rows=st.lists(TARGETS, max_size=6), policy=any_policy())
def test_the_result_columns_equal_the_reference_under_any_rule_set(
    rows: list[str], policy: Policy
) -> None:
    rows = [row for row in rows if not any("\ud800" <= c <= "\udfff" for c in row)]  # UTF-8
    got = arrow_result(pa.array(rows, pa.string()), policy)
    assert got.to_pylist() == reference_result(list(rows), policy)


@needs_twin
@pytest.mark.parametrize(
    ("called", "make", "reference"),
    [("canonicalize", arrow_urls, reference_urls), ("_one_row", arrow_result, reference_result)],
    ids=["url", "result"],
)
def test_an_ascii_row_the_twin_serves_makes_no_python_call(
    monkeypatch: pytest.MonkeyPatch,
    called: str,
    make: Callable[[Any, Policy], Any],
    reference: Callable[[list[str | None], Policy], list[Any]],
) -> None:
    calls: list[str] = []
    real = getattr(_columns, called)

    def counted(text: str, *args: object) -> object:
        calls.append(text)
        return real(text, *args)

    monkeypatch.setattr(_columns, called, counted)
    policy = Policy.profile("crawler")
    served = ["http://Example.com/a/../b?b=2&a=1#x y", "/x/%7e", "http://h/p?a;b", "/a/./b"]
    left = ["http://h/caf\u00e9", "http://h/p;jsessionid=1", "ftp://h/x"]
    got = make(pa.array(served + left), policy)
    assert got.to_pylist() == reference([*served, *left], policy)
    assert calls == left  # not ASCII, a path parameter, a scheme the twin declines
