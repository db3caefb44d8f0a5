"""urlsan.dask on a real dask.distributed LocalCluster (two worker processes): the DataFrame
function with map_partitions and its meta, and the Bag function."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("dask.dataframe", reason="urlsan.dask is tested with the dask extra")
pytest.importorskip("distributed", reason="urlsan.dask is tested with the dask extra")

import dask.bag as db
import dask.dataframe as dd
from distributed import Client, LocalCluster

from urlsan.dask import META, build_policy, canonicalize_frame, canonicalize_partition

pytestmark = pytest.mark.e2e

URLS = [
    "HTTP://Example.COM:80/%7Eguide/./intro?utm_source=feed#top",
    "http://example.com/~guide/intro\n",
    "",
    None,
    "http://example.com/a%2fb?ref=x&b=2&a=1",
]
CANONICAL = [
    ("http://example.com/~guide/intro", True),
    ("http://example.com/~guide/intro", False),  # the newline is not part of the URL
    (None, None),
    (None, None),
    ("http://example.com/a%2Fb?a=1&b=2&ref=x", True),
]


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def test_dataframe_map_partitions(client: Client) -> None:
    frame = dd.from_pandas(pd.DataFrame({"url": URLS, "n": range(5)}), npartitions=2)
    canon = frame.map_partitions(canonicalize_frame, "url", meta=META)
    out = canon.compute()
    assert list(zip(out.url.astype(object).where(out.url.notna(), None),
                    out.changed.astype(object).where(out.changed.notna(), None),
                    strict=True)) == CANONICAL  # fmt: skip
    assert list(out.index) == list(range(5))  # the input's index: it joins back
    assert out.rules[0] == [
        "lowercase-scheme", "lowercase-host", "drop-default-port", "decode-unreserved",
        "remove-dot-segments", "drop-params", "strip-fragment",
    ]  # fmt: skip
    assert out.dtypes.to_dict() == META.dtypes.to_dict()


def test_policy_travels_to_the_workers(client: Client) -> None:
    policy = build_policy("rfc3986", rules="+decode-escaped-slash", drop_params=["ref"])
    series = dd.from_pandas(pd.Series(URLS, name="url"), npartitions=2)
    out = series.map_partitions(canonicalize_frame, policy=policy, meta=META).compute()
    assert out.url.iloc[4] == "http://example.com/a/b?b=2&a=1"


def test_bag_map_partitions_and_to_dataframe(client: Client) -> None:
    bag = db.from_sequence(URLS, npartitions=2)
    rows: list[dict[str, Any]] = bag.map_partitions(canonicalize_partition).compute()
    assert [(r["url"], r["changed"]) for r in rows] == CANONICAL
    frame = bag.map_partitions(canonicalize_partition).to_dataframe(meta=META)
    assert frame.url.dropna().drop_duplicates().compute().tolist() == [
        "http://example.com/~guide/intro",
        "http://example.com/a%2Fb?a=1&b=2&ref=x",
    ]


def test_refused_urls_keep_their_row() -> None:
    policy = build_policy(rules="+reject-escaped-slash")
    (row,) = canonicalize_partition(["http://e.com/a%2Fb"], policy=policy)
    assert row == {"url": None, "changed": False, "rules": ["reject-escaped-slash"]}
    frame = canonicalize_frame(pd.Series(["http://e.com/a%2Fb"]), policy=policy)
    assert frame.url.isna().all() and not frame.changed.iloc[0]


def test_empty_partition() -> None:
    out = canonicalize_frame(pd.DataFrame({"url": pd.Series([], dtype="string")}))
    assert out.empty and list(out.columns) == ["url", "changed", "rules"]


def test_surt_keys_in_a_dask_frame() -> None:
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from urlsan.core import surt
    from urlsan.dask import SURT_META, surt_frame

    urls = ["http://www.Archive.org/Index.html?b=1&a=2", None, "http://a:x/", "https://b.org/"]
    frame = dd.from_pandas(pd.DataFrame({"url": urls}), npartitions=2)
    keys = frame.map_partitions(surt_frame, "url", meta=SURT_META).compute(scheduler="sync")
    assert keys.tolist() == ["org,archive)/index.html?a=2&b=1", pd.NA, pd.NA, "org,b)/"]
    own = surt_frame(pd.Series(urls), profile="urlsan")
    assert own[3] == surt("https://b.org/", profile="urlsan") == "https://(org,b,)/"
