"""What the data-frame integrations (`urlsan.spark`, `urlsan.dask`) share: the policy their
options name, and the loop that turns a batch of URLs into the url / changed / rules columns.

Pure Python: neither Spark nor Dask nor pandas is needed here, so each integration needs only its
own extra.
"""

from __future__ import annotations

from collections.abc import Iterable

from urlsan.core import InvalidTarget, Policy, canonicalize

Columns = tuple[list[str | None], list[bool | None], list[list[str] | None]]


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
