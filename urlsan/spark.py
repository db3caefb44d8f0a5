"""urlsan in PySpark: a vectorized UDF over Arrow, for the DataFrame API and for SQL.

    from urlsan.spark import canonicalize_udf, register

    df.select(canonicalize_udf("url").alias("c")).select("c.url", "c.changed", "c.rules")
    canon = canonicalize_udf(profile="crawler", rules="+merge-slashes", drop_params=["ref"])
    df.withColumn("c", canon("url"))
    register(spark)                                    # SQL: urlsan_canonicalize(url).url
    df.select(surt_udf("url"))                         # SURT keys (urlsan.core.surt)
    audit(spark.read.text("access.log.gz"))            # audit records, as `urlsan audit` writes
    audit(spark.read.format("binaryFile").load("crawl/*.warc.gz"), profile="crawler")

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
from typing import TYPE_CHECKING, Any, cast

import pandas as pd  # type: ignore[import-untyped]  # no stubs (pandas-stubs is not a dependency)
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]  # no stubs
from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.pandas import functions as spark_functions
from pyspark.sql.pandas.functions import pandas_udf
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from urlsan import _audit_frames
from urlsan._columns import arrow_result, build_policy, columns, surt_keys
from urlsan.core import Policy

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "AUDIT_TYPE",
    "RESULT_TYPE",
    "audit",
    "build_policy",
    "canonicalize_udf",
    "register",
    "surt_udf",
]

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


# --- audit: traffic recorded where the cluster reads it


def spark_type(value: Any) -> DataType:
    """The Spark type of a value of the audit record (`_audit_frames.exemplar`)."""
    if isinstance(value, bool):
        return BooleanType()
    if isinstance(value, int):
        return LongType()
    if isinstance(value, str):
        return StringType()
    if isinstance(value, list):
        return ArrayType(spark_type(value[0]))
    if isinstance(value, dict):
        return StructType([StructField(k, spark_type(v)) for k, v in value.items()])
    raise TypeError(f"no Spark type for {value!r}")


# The audit record's fields, derived from the record builder (`_audit_frames.exemplar`), and the
# frame `audit` returns: those fields, then the line ``urlsan audit`` writes.
RECORD_TYPE = cast(StructType, spark_type(_audit_frames.exemplar()))
AUDIT_TYPE = StructType([*RECORD_TYPE.fields, StructField(_audit_frames.LINE, StringType())])
_LINES_TYPE = StructType([StructField(_audit_frames.LINE, StringType())])


def _joined(lines: pa.Array) -> bytes:
    """An Arrow array of lines as one block of bytes, each line ended by a newline, nulls left
    out: joined in Arrow, without a Python string per line."""
    values = pc.drop_null(lines).cast(pa.binary())
    if not len(values):
        return b""
    whole = pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)
    block: bytes = pc.binary_join(whole, b"\n")[0].as_py()
    return block + b"\n"


def _audit_batches(options: _audit_frames.Options, fmt: str, files: bool) -> Any:
    """The function ``mapInArrow`` runs: Arrow batches of lines (or of files' bytes, with their
    paths) → batches of the audit-log lines ``urlsan audit`` writes for them, in order."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        _freeze_worker_heap()
        checker = _audit_frames.auditor_of(options)
        for batch in batches:
            if files:
                values, names = batch.column(0).to_pylist(), batch.column(1).to_pylist()
                out = [
                    line
                    for content, name in zip(values, names, strict=True)
                    if content is not None
                    for line in _audit_frames.file_records(content, checker, fmt, name)
                ]
            else:
                out = _audit_frames.block_records(_joined(batch.column(0)), checker, fmt)
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], [_audit_frames.LINE])

    return run


def audit(
    frame: DataFrame, column: str | None = None, *, format: str = "auto", **options: Any
) -> DataFrame:
    """The audit records ``urlsan audit`` writes for the traffic in ``frame``, as a DataFrame
    (`AUDIT_TYPE`): the record's fields, and ``line``, the record as ``urlsan audit`` writes it.

    ``frame``'s ``column`` (default: ``content``, else ``value``, else its only column) holds
    either the lines of access logs (a string column: ``spark.read.text``; ``format``
    ``"access-log"``, or ``"cdxj"``) or whole recorded files (a binary column:
    ``spark.read.format("binaryFile")``, whose ``path`` names the file in errors), each read as
    ``urlsan audit`` reads a file: WARC, HAR, access log, flow file, CDX or CDXJ, gzip or not,
    the format found from its first bytes unless ``format`` names it.  Records come in input
    order; an unreadable line or entry is left out, as ``urlsan audit`` leaves it out.

    ``records.select("line").write.text(...)`` writes the lines ``urlsan audit -o`` writes;
    ``records.drop("line").write.json(...)`` JSON Lines that ``urlsan report`` summarizes the
    same.  The columns hold text as UTF-8: a byte of a target that is not reads "?" there, and
    keeps its "\\udcXX" escape in ``line``, as in ``urlsan audit``'s record.

    The options are ``urlsan audit``'s, as keywords: ``mode`` (default: audit), ``profile``,
    ``rules``, ``signed``, ``backends``, ``redact``, ``drop_params``, ``keep_params``,
    ``max_target``; a bad one raises `ValueError` here, on the driver.
    """
    frozen = _audit_frames.options_of(options)
    _audit_frames.auditor_of(frozen)  # a bad option fails here, on the driver
    name = column or next((c for c in ("content", "value") if c in frame.columns), frame.columns[0])
    files = isinstance(frame.schema[name].dataType, BinaryType)
    format = _audit_frames.format_of(format, lines=not files)
    if files:
        path = F.col("path") if "path" in frame.columns else F.lit("<file>")
        chosen = frame.select(F.col(name), path.alias("path"))
    else:
        chosen = frame.select(F.col(name))
    lines = chosen.mapInArrow(_audit_batches(frozen, format, files), _LINES_TYPE)
    line = F.col(_audit_frames.LINE)
    return lines.select(F.from_json(line, RECORD_TYPE).alias("r"), line).select("r.*", line)
