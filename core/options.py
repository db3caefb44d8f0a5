"""A `Policy` from the options a front end takes: a profile, rule switches, parameter specs.

Every front end builds its policy here, so that each says the same of a bad value: the proxy's
``urlsan_*`` options, the CLI's flags, Scrapy's ``URLSAN_*`` settings and the data-frame
integrations' arguments.  Only the option's name differs; `OptionNames` holds each front end's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from .policy import Policy


class OptionNames(NamedTuple):
    """What a front end calls each option, for its error messages."""

    profile: str
    rules: str
    drop: str
    keep: str


ARGUMENTS = OptionNames("profile", "rules", "drop_params", "keep_params")


def _specs(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def policy_from_options(
    profile: str = "rfc3986",
    rules: str | Iterable[str] = "",
    drop: str | Iterable[str] | None = (),
    keep: str | Iterable[str] | None = (),
    *,
    names: OptionNames = ARGUMENTS,
) -> Policy:
    """The policy of ``profile`` with ``rules`` switched on and off (a spec such as
    ``"+merge-slashes,-strip-fragment"``, or its switches as a list) and the parameter specs
    ``drop`` and ``keep`` added (`Policy.with_params`).

    Raises `ValueError` as ``"<option>: <what is wrong>"``, the option named as ``names`` says.
    """
    try:
        policy = Policy.profile(profile)
    except ValueError as e:
        raise ValueError(f"{names.profile}: {e}") from None
    spec = rules if isinstance(rules, str) else ",".join(rules)
    if spec:
        try:
            policy = policy.with_rules(spec)
        except ValueError as e:
            raise ValueError(f"{names.rules}: {e}") from None
    for name, value in ((names.drop, _specs(drop)), (names.keep, _specs(keep))):
        if value:
            option = "drop" if name == names.drop else "keep"
            try:
                policy = policy.with_params(**{option: value})
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
    return policy
