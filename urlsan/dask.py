"""urlsan in Dask: functions ready for ``map_partitions`` on DataFrames and on Bags.

    import dask.dataframe as dd
    from urlsan.dask import META, build_policy, canonicalize_frame, canonicalize_partition

    policy = build_policy("crawler", rules="+merge-slashes", drop_params=["ref"])
    canon = frame.map_partitions(canonicalize_frame, "url", policy=policy, meta=META)
    rows = bag.map_partitions(canonicalize_partition, policy=policy)   # dicts
    frame = rows.to_dataframe(meta=META)
    keys = frame.map_partitions(surt_frame, "url", meta=SURT_META)     # SURT keys

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

from urlsan._columns import build_policy, columns, surt_keys
from urlsan.core import Policy
from urlsan.core.many import collector_paused

__all__ = [
    "META",
    "SURT_META",
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
