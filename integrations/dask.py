"""urlsan in Dask: functions ready for ``map_partitions`` on DataFrames and on Bags.

    import dask.dataframe as dd
    from urlsan.dask import META, build_policy, canonicalize_frame, canonicalize_partition

    policy = build_policy("crawler", rules="+merge-slashes", drop_params=["ref"])
    canon = frame.map_partitions(canonicalize_frame, "url", policy=policy, meta=META)
    rows = bag.map_partitions(canonicalize_partition, policy=policy)   # dicts
    frame = rows.to_dataframe(meta=META)

Both give, per URL, the canonical ``url``, whether it ``changed``, and the ``rules`` that fired
(a list, in the order they ran).  Surrounding whitespace, such as a text line's newline, is not
part of the URL.  A missing or blank URL gives a null ``url``, ``changed`` and ``rules``; a URL
the policy refuses (only the ``strict`` profile and the opt-in ``reject-escaped-slash`` rule
refuse) gives a null ``url``, ``changed`` false, and in ``rules`` the rule that refused.

The functions need pandas (for DataFrames) but not Dask itself; the policy travels to the
workers pickled inside the task graph (it is a small frozen value), and the workers need urlsan
installed.  ``pip install 'urlsan[dask]'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd  # type: ignore[import-untyped]  # no stubs (pandas-stubs is not a dependency)
from urlsan.core import InvalidTarget, Policy, canonicalize

__all__ = ["META", "build_policy", "canonicalize_frame", "canonicalize_partition"]

CRAWLER = Policy.profile("crawler")

# The ``meta`` of `canonicalize_frame`'s output (and of a Bag of its rows turned into a frame).
META = pd.DataFrame(
    {
        "url": pd.Series(dtype="string"),
        "changed": pd.Series(dtype="boolean"),
        "rules": pd.Series(dtype="object"),
    }
)


def build_policy(
    profile: str = "crawler",
    rules: str = "",
    drop_params: str | Iterable[str] = (),
    keep_params: str | Iterable[str] = (),
) -> Policy:
    """The policy of a profile, with rules switched on or off and parameter specs added."""
    policy = Policy.profile(profile).with_rules(rules)
    drop = (drop_params,) if isinstance(drop_params, str) else tuple(drop_params)
    keep = (keep_params,) if isinstance(keep_params, str) else tuple(keep_params)
    return policy.with_params(drop=drop, keep=keep) if drop or keep else policy


Columns = tuple[list[str | None], list[bool | None], list[list[str] | None]]


def _columns(values: Iterable[object], policy: Policy) -> Columns:
    """The url, changed and rules of each value, as three lists.  One loop with the appends
    bound once: this glue runs per URL, beside a canonicalize call of a few microseconds."""
    urls: list[str | None] = []
    changed: list[bool | None] = []
    rules: list[list[str] | None] = []
    add_url, add_changed, add_rules = urls.append, changed.append, rules.append
    for value in values:
        # None, or NaN where pandas marks a missing value; surrounding whitespace (a text
        # line's newline) is not part of the URL, and a blank one is none.
        url = value.strip() if isinstance(value, str) else ""
        if not url:
            add_url(None)
            add_changed(None)
            add_rules(None)
            continue
        try:
            result = canonicalize(url, policy)
        except InvalidTarget as e:
            add_url(None)
            add_changed(False)
            add_rules([e.rule])
            continue
        add_url(result.url)
        add_changed(result.url != url)
        edits = result.edits  # most URLs in a crawl are canonical already: no edits
        add_rules(list(dict.fromkeys([e.rule for e in edits])) if edits else [])
    return urls, changed, rules


def canonicalize_frame(
    partition: pd.DataFrame | pd.Series, column: str = "url", *, policy: Policy = CRAWLER
) -> pd.DataFrame:
    """A pandas partition (a DataFrame's ``column``, or a Series) → a DataFrame shaped like
    `META`, on the partition's index (so it joins back onto the input)."""
    values = partition[column] if isinstance(partition, pd.DataFrame) else partition
    urls, changed, rules = _columns(values.tolist(), policy)
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
    urls_, changed, rules = _columns(urls, policy)
    return [
        {"url": u, "changed": c, "rules": r} for u, c, r in zip(urls_, changed, rules, strict=True)
    ]
