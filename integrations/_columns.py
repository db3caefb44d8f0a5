"""What the data-frame integrations (`urlsan.spark`, `urlsan.dask`) share: the policy their
options name, and the loop that turns a batch of URLs into the url / changed / rules columns.

Pure Python: neither Spark nor Dask nor pandas is needed here, so each integration needs only its
own extra.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator

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


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a batch builds a container per row.

    A Bag partition of 30,000 URLs becomes 30,000 dicts: each 700 new containers set the
    collector off, and its passes walk the rows built so far, which costs as much as
    canonicalizing them (bench/integrations.py).  The rows hold no cycles; the collector runs
    again, as it was, when the batch is done."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
