"""urlsan.spark on a real local Spark (local[2]): the UDF from the DataFrame API and from SQL.

CI installs the spark extra and a JDK (.ci/install-jdk) and sets URLSAN_REQUIRE_SPARK=1, so
these run there and fail rather than skip when something is missing; elsewhere they skip without
pyspark or Java.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

if os.environ.get("URLSAN_REQUIRE_SPARK") != "1":
    pytest.importorskip("pyspark", reason="urlsan.spark needs the spark extra")
    pytest.importorskip("pyarrow", reason="pandas UDFs need pyarrow")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("PySpark needs a Java runtime: .ci/install-jdk", allow_module_level=True)

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from urlsan.spark import canonicalize_udf, register

pytestmark = pytest.mark.e2e

URLS = [
    ("HTTP://Example.COM:80/%7Eguide/./intro?utm_source=feed#top",),
    ("http://example.com/~guide/intro\n",),
    ("http://example.com/a%2fb?ref=x&b=2&a=1",),
    (None,),
    (" ",),
]


def rows(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in frame.collect()]


def test_dataframe_api(spark: SparkSession) -> None:
    df = spark.createDataFrame(URLS, "url string")
    out = df.select(canonicalize_udf("url").alias("c")).select("c.url", "c.changed", "c.rules")
    assert rows(out) == [
        ("http://example.com/~guide/intro", True, [
            "lowercase-scheme", "lowercase-host", "drop-default-port", "decode-unreserved",
            "remove-dot-segments", "drop-params", "strip-fragment",
        ]),
        ("http://example.com/~guide/intro", False, []),  # a line's newline is no change
        ("http://example.com/a%2Fb?a=1&b=2&ref=x", True, ["uppercase-escape", "sort-query"]),
        (None, None, None),  # null in, null out
        (None, None, None),  # blank is null
    ]  # fmt: skip


def test_factory_options(spark: SparkSession) -> None:
    df = spark.createDataFrame(URLS, "url string")
    canon = canonicalize_udf(profile="rfc3986", rules="+decode-escaped-slash", drop_params="ref")
    out = df.select(canon(F.col("url")).url.alias("url")).where(F.col("url").isNotNull())
    assert [r[0] for r in out.collect()] == [
        "http://example.com/~guide/intro#top",  # rfc3986 keeps the fragment; drop-params is
        # switched on by drop_params, so utm_source goes too
        "http://example.com/~guide/intro",
        "http://example.com/a/b?b=2&a=1",  # rfc3986: the query is not sorted
    ]


def test_refused_url_keeps_its_row(spark: SparkSession) -> None:
    df = spark.createDataFrame([("http://e.com/a%2Fb",), ("http://e.com/a",)], "url string")
    canon = canonicalize_udf("url", rules="+reject-escaped-slash")
    assert rows(df.select(canon.alias("c")).select("c.*")) == [
        (None, False, ["reject-escaped-slash"]),
        ("http://e.com/a", False, []),
    ]


def test_sql_and_deduplication(spark: SparkSession) -> None:
    register(spark)
    spark.createDataFrame(URLS * 50, "url string").createOrReplaceTempView("urls")
    distinct = spark.sql(
        "SELECT DISTINCT url FROM (SELECT urlsan_canonicalize(url).url AS url FROM urls) "
        "WHERE url IS NOT NULL"
    )
    assert sorted(r.url for r in distinct.collect()) == [
        "http://example.com/a%2Fb?a=1&b=2&ref=x",
        "http://example.com/~guide/intro",
    ]


def test_the_pandas_udf_of_older_pysparks_gives_the_same_struct() -> None:
    """pyspark 3.5 and 4.0 have no Arrow UDF: there the pandas UDF runs, and its function must
    give what the Arrow UDF's gives (no session needed: both are plain functions of a batch)."""
    import pandas as pd
    import pyarrow as pa

    from urlsan.spark import _canonicalize_arrow, _canonicalize_batch, build_policy

    policy = build_policy("crawler", rules="+reject-escaped-slash")
    values = [url for (url,) in URLS]
    arrow = _canonicalize_arrow(policy)(pa.array(values, pa.string())).to_pylist()
    frame = _canonicalize_batch(policy)(pd.Series(values, dtype=object))
    # Into Arrow as Spark takes a pandas UDF's result: a missing value (None or NaN) is null.
    fields = [pa.field("url", pa.string()), pa.field("changed", pa.bool_())]
    fields.append(pa.field("rules", pa.list_(pa.string())))
    columns = [pa.Array.from_pandas(frame[f.name], type=f.type) for f in fields]
    assert pa.StructArray.from_arrays(columns, fields=fields).to_pylist() == arrow
    assert [row["url"] for row in arrow] == [
        "http://example.com/~guide/intro",
        "http://example.com/~guide/intro",
        None,  # refused: a%2fb
        None,
        None,
    ]
    assert arrow[2] == {"url": None, "changed": False, "rules": ["reject-escaped-slash"]}


def test_a_worker_freezes_its_heap_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a Spark task the first batch moves the worker's objects out of the collector's reach
    (PySpark collects after every task); outside one, and on later batches, nothing is frozen."""
    import gc

    import pyarrow as pa

    import urlsan.spark
    from urlsan.spark import _canonicalize_arrow, build_policy

    freezes: list[None] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(None))
    monkeypatch.setattr(urlsan.spark, "_heap_frozen", False)
    batch = _canonicalize_arrow(build_policy())
    values = pa.array([url for (url,) in URLS], pa.string())
    expected = batch(values).to_pylist()
    assert freezes == []  # no task: the driver, or this test
    monkeypatch.setattr(urlsan.spark.TaskContext, "get", classmethod(lambda cls: object()))
    assert batch(values).to_pylist() == expected
    assert batch(values).to_pylist() == expected
    assert len(freezes) == 1


def test_bad_options_fail_on_the_driver() -> None:
    # (No session needed: a job builds its UDF before starting Spark, and fails early.)
    with pytest.raises(ValueError, match="unknown profile"):
        canonicalize_udf(profile="nonsense")
    with pytest.raises(ValueError, match="parameter spec"):
        canonicalize_udf(drop_params="a:b:c")


def test_surt_udf(spark: SparkSession) -> None:
    from urlsan.core import surt
    from urlsan.spark import surt_udf

    urls = ["http://www.Archive.org/Index.html?b=1&a=2", None, "http://a:x/", "https://b.org/"]
    frame = spark.createDataFrame([(u,) for u in urls], "url string")
    rows = frame.select(surt_udf("url").alias("k"), surt_udf(profile="urlsan")("url")).collect()
    assert [r[0] for r in rows] == ["org,archive)/index.html?a=2&b=1", None, None, "org,b)/"]
    assert rows[3][1] == surt("https://b.org/", profile="urlsan")
    with pytest.raises(ValueError, match="SURT profile"):
        surt_udf(profile="nope")
