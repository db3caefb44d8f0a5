"""urlsan in PySpark: a vectorized UDF over Arrow, for the DataFrame API and for SQL.

    from urlsan.spark import canonicalize_udf, register

    df.select(canonicalize_udf("url").alias("c")).select("c.url", "c.changed", "c.rules")
    canon = canonicalize_udf(profile="crawler", rules="+merge-slashes", drop_params=["ref"])
    df.withColumn("c", canon("url"))
    register(spark)                                    # SQL: urlsan_canonicalize(url).url
    df.select(surt_udf("url"))                         # SURT keys (urlsan.core.surt)

The UDF returns a struct ``<url: string, changed: boolean, rules: array<string>>``: the
canonical URL, whether it differs from the input, and the rules that fired, in the order they
ran.  Spark hands the UDF an Arrow batch at a time (10,000 rows by default:
``spark.sql.execution.arrow.maxRecordsPerBatch``), so Python is entered once per batch, not once
per row.  On pyspark 4.1 and later it is an Arrow UDF (``arrow_udf``): the batch's URLs are read
from Arrow and the result built in Arrow, with no pandas in between; on earlier versions, a
pandas UDF with the same result.

* Surrounding ASCII white space (a text line's newline) is not part of the URL.  A null or blank
  URL gives a null ``url``, ``changed`` and ``rules`` (a pandas UDF cannot return a null struct,
  and the Arrow UDF gives the same).
* A URL the policy refuses (only the ``strict`` profile and the opt-in ``reject-escaped-slash``
  rule refuse) gives a null ``url``, ``changed`` false, and in ``rules`` the rule that refused:
  the row stays, and ``url IS NULL AND rules IS NOT NULL`` finds the refused ones.

On its first batch in a Python worker the UDF moves the objects the worker holds by then (its
modules: pyspark, pandas, pyarrow, urlsan) to the cyclic collector's permanent generation
(`gc.freeze`): PySpark runs ``gc.collect()`` in a reused worker after every task, and walking
those ~75,000 objects each time costs 20-30 ms of CPU per task, as much as canonicalizing
~20,000 URLs.  Reference counting frees them as before, and objects allocated later are
collected as before.

The policy travels to the executors pickled in the UDF's closure; the executors need urlsan
installed (``pip install 'urlsan[spark]'`` in the image, or ``--py-files``).  Needs pyspark,
pandas and pyarrow: ``pip install 'urlsan[spark]'``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pandas as pd  # type: ignore[import-untyped]  # no stubs (pandas-stubs is not a dependency)
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
from pyspark import TaskContext
from pyspark.sql.pandas import functions as spark_functions
from pyspark.sql.pandas.functions import pandas_udf
from pyspark.sql.types import ArrayType, BooleanType, StringType, StructField, StructType

from urlsan._columns import arrow_result, build_policy, columns, surt_keys
from urlsan.core import Policy

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

__all__ = ["RESULT_TYPE", "build_policy", "canonicalize_udf", "register", "surt_udf"]

# A StructType, not the DDL string "url string, …": parsing DDL needs a running SparkContext, and
# a UDF is often built before the session (on the driver, to fail early on a bad option).
RESULT_TYPE = StructType(
    [
        StructField("url", StringType()),
        StructField("changed", BooleanType()),
        StructField("rules", ArrayType(StringType())),
    ]
)


# pyspark 4.1 and later; None before (3.5, 4.0), where the pandas UDF serves.
_arrow_udf: Any = getattr(spark_functions, "arrow_udf", None)

# RESULT_TYPE in Arrow.  Spark takes string for a string field whatever its
# spark.sql.execution.arrow.useLargeVarTypes (it converts large_string and string alike).
_ARROW_FIELDS = [
    pa.field("url", pa.string()),
    pa.field("changed", pa.bool_()),
    pa.field("rules", pa.list_(pa.string())),
]
_ARROW_TYPE = pa.struct(_ARROW_FIELDS)


# Whether this process froze its heap (`_freeze_worker_heap`): module state, so that a reused
# Python worker, which imports urlsan.spark once, freezes once, whatever the tasks it runs.
_heap_frozen = False


def _freeze_worker_heap() -> None:
    """Exempt what a Spark Python worker holds at its first batch from its cyclic collector.

    PySpark's daemon runs a full ``gc.collect()`` in a reused worker after each task, and a full
    collection walks every tracked object: pyspark, pandas and pyarrow's modules alone are
    ~70,000, 20-30 ms per task whatever the task did.  `gc.freeze` moves them to the permanent
    generation, which collections skip.  Called before the batch's rows exist, so that what is
    frozen is the worker's long-lived state (modules, caches), not data.  Reference counting
    still frees a frozen object, and objects allocated later are collected as before: only a
    reference cycle that was already garbage at the first batch is never freed.  Nothing happens
    outside a Spark task (the batch function called on the driver, in a test)."""
    global _heap_frozen
    if _heap_frozen or TaskContext.get() is None:
        return
    gc.freeze()
    _heap_frozen = True


def _canonicalize_arrow(policy: Policy) -> Any:
    """The function the Arrow UDF runs: an Arrow array of URLs → a struct array of (url,
    changed, rules), read and written as Arrow buffers by the compiled loop (`arrow_result`):
    no pandas Series in and DataFrame out, no Python string for a URL the compiled twin
    canonicalizes (bench/integrations.py)."""

    def batch(values: pa.Array) -> pa.Array:
        _freeze_worker_heap()
        return arrow_result(values, policy).cast(_ARROW_TYPE)

    return batch


def _canonicalize_batch(policy: Policy) -> Any:
    """The function the pandas UDF runs (pyspark before 4.1): a Series of URLs → a DataFrame of
    (url, changed, rules)."""

    def batch(values: pd.Series) -> pd.DataFrame:
        _freeze_worker_heap()
        urls, changed, rules = columns(values.tolist(), policy)
        return pd.DataFrame({"url": urls, "changed": changed, "rules": rules})

    return batch


def canonicalize_udf(
    column: Column | str | None = None,
    *,
    profile: str = "crawler",
    rules: str = "",
    drop_params: str | Iterable[str] = (),
    keep_params: str | Iterable[str] = (),
    policy: Policy | None = None,
) -> Any:
    """The canonicalizing UDF (Arrow, or pandas before pyspark 4.1); applied to ``column`` when
    one is given.

    ``canonicalize_udf("url")`` is a Column (the struct described in the module's docstring);
    ``canonicalize_udf(profile=…)`` is the UDF, to apply to any column.  ``policy`` overrides the
    other arguments.  Raises `ValueError` for an unknown profile or rule, or a bad spec.
    """
    if policy is None:
        policy = build_policy(profile, rules, drop_params, keep_params)
    if _arrow_udf is not None:
        udf = _arrow_udf(_canonicalize_arrow(policy), RESULT_TYPE)
    else:  # pragma: no cover - pyspark 3.5 and 4.0
        udf = pandas_udf(_canonicalize_batch(policy), RESULT_TYPE)  # type: ignore[call-overload]
    return udf if column is None else udf(column)


def register(
    spark: SparkSession,
    name: str = "urlsan_canonicalize",
    *,
    profile: str = "crawler",
    rules: str = "",
    drop_params: str | Iterable[str] = (),
    keep_params: str | Iterable[str] = (),
    policy: Policy | None = None,
) -> Any:
    """Register the UDF for SQL as ``name``: ``SELECT urlsan_canonicalize(url).url FROM t``."""
    udf = canonicalize_udf(
        profile=profile, rules=rules, drop_params=drop_params, keep_params=keep_params,
        policy=policy,
    )  # fmt: skip
    return spark.udf.register(name, udf)


def surt_udf(
    column: Column | str | None = None, *, profile: str = "ia", policy: Policy | None = None
) -> Any:
    """The UDF of SURT keys (`urlsan.core.surt`), a string per URL: ``profile`` ``"ia"`` (as
    ``surt.surt`` and CDX indexes write them) or ``"urlsan"``; null for a null or blank URL and
    for one the profile cannot key.  Applied to ``column`` when one is given."""
    surt_keys([], profile)  # a bad profile fails on the driver

    def batch(values: pd.Series) -> pd.Series:
        _freeze_worker_heap()
        return pd.Series(surt_keys(values.tolist(), profile, policy), dtype=object)

    udf = pandas_udf(batch, StringType())  # type: ignore[call-overload]
    return udf if column is None else udf(column)
