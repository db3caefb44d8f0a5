"""What the data-frame integrations (`urlsan.spark`, `urlsan.dask`) share: the policy their
options name, and the loop that turns a batch of URLs into the url / changed / rules columns.

Pure Python: neither Spark nor Dask nor pandas is needed here, so each integration needs only its
own extra.
"""

from __future__ import annotations

from collections.abc import Iterable

from urlsan.core import Policy, many

Columns = many.Columns


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


def columns(values: Iterable[object], policy: Policy) -> Columns:
    """The url, changed and rules of each value, as three lists: `urlsan.core.many.columns`."""
    return many.columns(values if type(values) is list else list(values), policy)
