"""The url and SURT columns of a pyarrow string column (urlsan._columns.arrow_urls,
arrow_surt_keys), which DuckDB and Polars hand urlsan: the same values as the list path, for
nulls, blanks, refused URLs, slices, chunks and both offset widths."""

from __future__ import annotations

import os

import pytest

pa = pytest.importorskip("pyarrow", reason="the Arrow columns come with the duckdb extra")

from urlsan import _columns  # noqa: E402
from urlsan._columns import (  # noqa: E402
    arrow_surt_keys,
    arrow_urls,
    build_policy,
    canonical_urls,
    surt_keys,
)

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
