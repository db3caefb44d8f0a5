"""urlsan in Dask: functions ready for ``map_partitions`` on DataFrames and on Bags.

    import dask.dataframe as dd
    from urlsan.dask import META, build_policy, canonicalize_frame, canonicalize_partition

    policy = build_policy("crawler", rules="+merge-slashes", drop_params=["ref"])
    canon = frame.map_partitions(canonicalize_frame, "url", policy=policy, meta=META)
    rows = bag.map_partitions(canonicalize_partition, policy=policy)   # dicts
    frame = rows.to_dataframe(meta=META)
    keys = frame.map_partitions(surt_frame, "url", meta=SURT_META)     # SURT keys
    records = audit(db.read_text("logs/*.gz"), profile="crawler")      # audit records
    records = audit(db.from_sequence(glob("crawl/*.warc.gz")), files=True)

Both give, per URL, the canonical ``url``, whether it ``changed``, and the ``rules`` that fired
(a list, in the order they ran).  Surrounding ASCII white space, such as a text line's newline,
is not part of the URL.  A missing or blank URL gives a null ``url``, ``changed`` and ``rules``;
a URL the policy refuses (only the ``strict`` profile and the opt-in ``reject-escaped-slash`` rule
refuse) gives a null ``url``, ``changed`` false, and in ``rules`` the rule that refused.

The functions need pandas (for DataFrames) but not Dask itself; the policy travels to the
workers pickled inside the task graph (it is a small frozen value), and the workers need urlsan
installed.  ``pip install 'urlsan[dask]'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd  # type: ignore[import-untyped]  # no stubs (pandas-stubs is not a dependency)
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs

from urlsan import _audit_frames
from urlsan._columns import build_policy, columns, surt_keys
from urlsan.core import Policy
from urlsan.core.many import collector_paused

__all__ = [
    "AUDIT_META",
    "AUDIT_SCHEMA",
    "META",
    "SURT_META",
    "audit",
    "audit_partition",
    "build_policy",
    "canonicalize_frame",
    "canonicalize_partition",
    "surt_frame",
]

CRAWLER = Policy.profile("crawler")

# The ``meta`` of `canonicalize_frame`'s output (and of a Bag of its rows turned into a frame).
META = pd.DataFrame(
    {
        "url": pd.Series(dtype="string"),
        "changed": pd.Series(dtype="boolean"),
        "rules": pd.Series(dtype="object"),
    }
)


def canonicalize_frame(
    partition: pd.DataFrame | pd.Series, column: str = "url", *, policy: Policy = CRAWLER
) -> pd.DataFrame:
    """A pandas partition (a DataFrame's ``column``, or a Series) → a DataFrame shaped like
    `META`, on the partition's index (so it joins back onto the input)."""
    values = partition[column] if isinstance(partition, pd.DataFrame) else partition
    urls, changed, rules = columns(values.tolist(), policy)
    return pd.DataFrame(
        {
            "url": pd.array(urls, dtype="string"),
            "changed": pd.array(changed, dtype="boolean"),
            "rules": pd.Series(rules, dtype="object", index=values.index),
        },
        index=values.index,
    )


def canonicalize_partition(
    urls: Iterable[str | None], *, policy: Policy = CRAWLER
) -> list[dict[str, Any]]:
    """A Bag partition of URLs (text lines, say) → one ``{url, changed, rules}`` dict each.

    A list, not a generator: a partition's result may travel between worker processes."""
    urls_, changed, rules = columns(urls, policy)
    with collector_paused():
        return [
            {"url": u, "changed": c, "rules": r}
            for u, c, r in zip(urls_, changed, rules, strict=True)
        ]


# The ``meta`` of `surt_frame`'s output: a string Series named "surt".
SURT_META = pd.Series(dtype="string", name="surt")


def surt_frame(
    partition: pd.DataFrame | pd.Series,
    column: str = "url",
    *,
    profile: str = "ia",
    policy: Policy | None = None,
) -> pd.Series:
    """A pandas partition (a DataFrame's ``column``, or a Series) → the SURT key of each URL
    (`urlsan.core.surt`; ``profile`` ``"ia"`` or ``"urlsan"``), on the partition's index: null
    for a missing or blank URL and for one the profile cannot key."""
    values = partition[column] if isinstance(partition, pd.DataFrame) else partition
    keys = surt_keys(values.tolist(), profile, policy)
    return pd.Series(pd.array(keys, dtype="string"), index=values.index, name="surt")


# --- audit: traffic recorded where the cluster reads it


def arrow_type(value: Any) -> pa.DataType:
    """The Arrow type of a value of the audit record (`_audit_frames.exemplar`)."""
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, list):
        return pa.list_(arrow_type(value[0]))
    if isinstance(value, dict):
        return pa.struct([pa.field(k, arrow_type(v)) for k, v in value.items()])
    raise TypeError(f"no Arrow type for {value!r}")


# The record's fields, derived from the record builder (`_audit_frames.exemplar`), then the line
# ``urlsan audit`` writes: Arrow-backed columns, so that the lists of edits and findings stay
# lists of structs (Dask would turn Python objects into text).
AUDIT_SCHEMA = pa.schema(
    [
        *(pa.field(f.name, f.type) for f in arrow_type(_audit_frames.exemplar())),
        pa.field(_audit_frames.LINE, pa.string()),
    ]
)


def _frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    return pa.Table.from_pylist(records, AUDIT_SCHEMA).to_pandas(types_mapper=pd.ArrowDtype)


AUDIT_META = _frame([])


def _file_records(value: Any, options: _audit_frames.Options, fmt: str) -> list[str]:
    """One file's audit-log lines: its bytes, or its path (any fsspec URL: s3://, hdfs://)."""
    checker = _audit_frames.auditor_of(options)
    if isinstance(value, bytes | bytearray | memoryview):
        return _audit_frames.file_records(bytes(value), checker, fmt)
    import fsspec  # type: ignore[import-untyped]  # Dask's own dependency; no stubs

    with fsspec.open(value, "rb") as f:
        return _audit_frames.file_records(f, checker, fmt, str(value))


def audit_partition(
    values: Iterable[Any], options: _audit_frames.Options, fmt: str, files: bool
) -> pd.DataFrame:
    """A partition of lines (or of files: their bytes or paths) → its audit records, shaped
    like `AUDIT_META`, in order.  ``options``: `_audit_frames.options_of`."""
    if isinstance(values, pd.DataFrame):
        values = values.iloc[:, 0]
    items = list(values)
    if files:
        lines = [line for v in items if v is not None for line in _file_records(v, options, fmt)]
    else:
        lines = _audit_frames.line_records(items, _audit_frames.auditor_of(options), fmt)
    records = [_audit_frames.fields_of(line) | {_audit_frames.LINE: line} for line in lines]
    return _frame(records)


def audit(data: Any, *, format: str = "auto", files: bool = False, **options: Any) -> Any:
    """The audit records ``urlsan audit`` writes for the traffic in ``data``, as a Dask
    DataFrame (`AUDIT_META`): the record's fields, and ``line``, the record as ``urlsan audit``
    writes it.  ``records.drop(columns="line").to_json("out/*.jsonl", orient="records",
    lines=True)`` writes JSON Lines ``urlsan report`` reads.  The columns hold text as UTF-8: a
    byte of a target that is not reads "?" there, and keeps its "\\udcXX" escape in ``line``,
    as in ``urlsan audit``'s record.

    ``data`` is a Bag or a Dask Series (or one-column DataFrame) of the lines of access logs
    (``db.read_text``; ``format`` ``"access-log"``, or ``"cdxj"``), or with ``files=True``, of
    whole recorded files: their bytes, or their paths (any URL fsspec opens), each read as
    ``urlsan audit`` reads a file (WARC, HAR, access log, flow file, CDX, CDXJ; gzip or not),
    its format found from its first bytes unless ``format`` names it.  Records come in input
    order; an unreadable line or entry is left out, as ``urlsan audit`` leaves it out.

    The options are ``urlsan audit``'s, as keywords: ``mode`` (default: audit), ``profile``,
    ``rules``, ``signed``, ``backends``, ``redact``, ``drop_params``, ``keep_params``,
    ``max_target``; a bad one raises `ValueError` here, before any task runs.
    """
    import dask.dataframe as dd
    from dask.delayed import delayed

    frozen = _audit_frames.options_of(options)
    _audit_frames.auditor_of(frozen)  # a bad option fails here
    fmt = _audit_frames.format_of(format, lines=not files)
    parts = [delayed(audit_partition)(p, frozen, fmt, files) for p in data.to_delayed()]
    return dd.from_delayed(parts, meta=AUDIT_META, verify_meta=False)
