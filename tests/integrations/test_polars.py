"""urlsan.polars against a real Polars: the expression namespace, nulls, options, SURT keys."""

from __future__ import annotations

import pytest

from urlsan.core import canonicalize, surt
from urlsan.core.options import policy_from_options

pl = pytest.importorskip("polars", reason="urlsan.polars needs the polars extra")
import urlsan.polars  # noqa: E402, F401  (registers the namespace)

URLS = [
    "HTTP://www.Example.com/a/../b?utm_source=x&z=1",
    None,
    "  ",
    "http://example.com/ok",
    "http://a:x/",
    "https://Bücher.example/ü?b=2&a=1#f",
]


def test_namespace_agrees_with_the_library() -> None:
    frame = pl.DataFrame({"url": URLS})
    out = frame.select(
        c=pl.col("url").urlsan.canonicalize(),
        ch=pl.col("url").urlsan.changed(),
        r=pl.col("url").urlsan.rules(),
        res=pl.col("url").urlsan.result(),
    )
    policy = policy_from_options("crawler", "", (), ())
    expected = [
        None if u is None or not u.strip() else canonicalize(u.strip(), policy) for u in URLS
    ]
    assert out["c"].to_list() == [r and r.url for r in expected]
    assert out["ch"].to_list() == [r and r.changed for r in expected]
    assert out["r"][0].to_list() == [
        "lowercase-scheme",
        "lowercase-host",
        "remove-dot-segments",
        "drop-params",
    ]
    assert out["res"].struct.field("url").to_list() == out["c"].to_list()
    assert out.schema["r"] == pl.List(pl.String)


def test_surt_keys() -> None:
    frame = pl.DataFrame({"url": URLS})
    out = frame.select(ia=pl.col("url").urlsan.surt(), own=pl.col("url").urlsan.surt("urlsan"))
    assert out["ia"].to_list() == [
        None if u is None or not u.strip() or ":x" in u else surt(u) for u in URLS
    ]
    assert out["own"][5] == surt(URLS[5], profile="urlsan")


def test_options_and_lazy() -> None:
    lazy = pl.LazyFrame({"url": URLS}).with_columns(
        c=pl.col("url").urlsan.canonicalize(profile="rfc3986", drop_params=["z"])
    )
    assert lazy.collect()["c"][0] == "http://www.example.com/b"
    with pytest.raises(ValueError, match="profile"):
        pl.col("url").urlsan.canonicalize(profile="nope")
    with pytest.raises(ValueError, match="SURT profile"):
        pl.col("url").urlsan.surt("nope")


def test_strict_refusal_keeps_the_row() -> None:
    out = pl.DataFrame({"url": ["http://a.com/%zz", "http://a.com/"]}).select(
        c=pl.col("url").urlsan.canonicalize(profile="strict"),
        r=pl.col("url").urlsan.rules(profile="strict"),
    )
    assert out["c"].to_list() == [None, "http://a.com/"]
    assert len(out["r"][0]) == 1
