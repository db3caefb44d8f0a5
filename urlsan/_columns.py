"""What the data-frame integrations (`urlsan.spark`, `urlsan.dask`) share: the policy their
options name, and the loop that turns a batch of URLs into the url / changed / rules columns.

Pure Python: neither Spark nor Dask nor pandas is needed here, so each integration needs only its
own extra.
"""

from __future__ import annotations

from collections.abc import Iterable

from urlsan.core import Policy, many
from urlsan.core.options import policy_from_options

Columns = many.Columns


def build_policy(
    profile: str = "crawler",
    rules: str = "",
    drop_params: str | Iterable[str] = (),
    keep_params: str | Iterable[str] = (),
) -> Policy:
    """The policy of a profile, with rules switched on or off and parameter specs added;
    `ValueError` names the bad argument."""
    return policy_from_options(profile, rules, drop_params, keep_params)


def columns(values: Iterable[object], policy: Policy) -> Columns:
    """The url, changed and rules of each value, as three lists: `urlsan.core.many.columns`."""
    return many.columns(values if type(values) is list else list(values), policy)
