"""What the data-frame integrations (`urlsan.spark`, `urlsan.dask`, `urlsan.duckdb`,
`urlsan.polars`) share: the policy their options name, the loop that turns a batch of URLs into
the url / changed / rules columns, and the one that turns it into SURT keys.

Pure Python: neither Spark, Dask, DuckDB, Polars nor pandas is needed here, so each integration
needs only its own extra.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from urlsan.core import Policy, many
from urlsan.core.options import policy_from_options
from urlsan.core.surt import PROFILES as SURT_PROFILES
from urlsan.core.surt import ia_key, urlsan_key

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


def surt_keys(
    values: Iterable[object], profile: str = "ia", policy: Policy | None = None
) -> list[str | None]:
    """The SURT key of each value (`urlsan.core.surt`): None for None, NaN, any other non-str,
    a blank string, and a URL the profile cannot key (a port that is not a number, a URL the
    policy refuses)."""
    if profile not in SURT_PROFILES:
        raise ValueError(f"unknown SURT profile {profile!r}: one of {', '.join(SURT_PROFILES)}")
    if profile == "urlsan":
        urls, _, _ = columns(values, policy if policy is not None else build_policy("rfc3986"))
        return [None if url is None else urlsan_key(url) for url in urls]
    out: list[str | None] = []
    append = out.append
    for value in values:
        if type(value) is not str or not (text := value.strip(many.BLANKS)):
            append(None)
            continue
        try:
            append(ia_key(text))
        except ValueError:  # InvalidTarget: a port that is not a number
            append(None)
    return out


def canonical_urls(values: Iterable[object], policy: Policy) -> list[str | None]:
    """The url column of `columns` alone, without building the other two: the compiled loop
    (`urlsan.core.many.urls`) runs until a value it leaves to the slow way (None, a blank, a URL
    the policy refuses), which `columns` answers, and then goes on after it."""
    rest: list[Any] = values if type(values) is list else list(values)
    out: list[str | None] = []
    restarts = 0
    while rest:
        done = many.urls(rest, policy)
        out += done
        if len(done) == len(rest):
            break
        restarts += 1
        if restarts > 16:  # many values for the slow way: one pass of `columns` for the rest
            out += columns(rest[len(done) :], policy)[0]
            break
        out.append(columns(rest[len(done) : len(done) + 1], policy)[0][0])
        rest = rest[len(done) + 1 :]
    return out
