"""The immutable `Policy`: which rules run (by named profile) and which parameters they drop.

A pure value: nothing derived from it is stored on it.  What the accelerated path needs for a
policy is derived and cached in `canonical.py`; the rules, their order and what the profiles
switch on are declared in `pipeline.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from . import params
from .pipeline import RULES, TWIN_AFTER, Rule

__all__ = ["RULES", "Policy", "Rule"]

RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)
RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}

# Repairs without which the output would not be a valid URI-reference (RFC 3986 Appendix A).
REQUIRED_RULES = frozenset(r.name for r in RULES if r.required)

_MEANING_KEPT = frozenset(r.name for r in RULES if not r.lossy)

# The rules on a query's parameters: driver.query_rules_after runs them after the compiled twin.
QUERY_RULES = frozenset(r.name for r in RULES if r.twin == TWIN_AFTER)

# What drop-params drops unless told otherwise: tracking parameters and session IDs, each with
# its source in params.DEFAULT_PARAMS.
DEFAULT_DROP_PARAMS: tuple[str, ...] = tuple(p.pattern for p in params.DEFAULT_PARAMS)

PROFILES: dict[str, frozenset[str]] = {
    "rfc3986": _MEANING_KEPT,
    # RFC 2396 §2.3 counts "!*'()" as unreserved: same rules, wider decode table.
    "rfc2396": _MEANING_KEPT,
    "crawler": _MEANING_KEPT | {r.name for r in RULES if r.crawler},
    "strict": _MEANING_KEPT,
}

DEFAULT_PORTS: dict[str, str] = {"http": "80", "https": "443", "ws": "80", "wss": "443"}

_RULE_SPEC = re.compile(r"\s*([+-]?)\s*([a-z0-9-]+)\s*")


@dataclass(frozen=True, slots=True)
class Policy:
    """Which rules run.  Build one with `Policy.profile(name)` and adjust with `with_rules`
    and `with_params`.

    ``strict``: nothing is repaired; input that is not a valid URI-reference raises `InvalidTarget`.
    ``unreserved_2396``: decode RFC 2396's marks ``!*'()`` as unreserved too.
    ``drop_params`` / ``keep_params``: parameter specs for ``drop-params`` (`params.py`).
    """

    rules: frozenset[str] = _MEANING_KEPT
    """The names of the rules that run (`urlsan rules` lists them)."""
    name: str = "rfc3986"
    """The profile it was built from, as audit records name it."""
    strict: bool = False
    """Refuse instead of repair: input that is no valid URI-reference raises `InvalidTarget`."""
    unreserved_2396: bool = False
    """Decode RFC 2396's marks ``!*'()`` as unreserved too."""
    drop_params: tuple[str, ...] = DEFAULT_DROP_PARAMS
    """Parameter specs ``drop-params`` drops: ``[HOST:]NAME[,NAME...]``, names as patterns."""
    keep_params: tuple[str, ...] = ()
    """Allowlist specs: on a host one covers, every parameter it does not name is dropped."""

    def __post_init__(self) -> None:
        unknown = set(self.rules) - set(RULE_NAMES)
        if unknown:
            raise ValueError(f"unknown rule(s): {', '.join(sorted(unknown))}")
        off = REQUIRED_RULES - self.rules
        if off:
            raise ValueError(
                f"{', '.join(sorted(off))} cannot be switched off: the output would not be a "
                "valid URI-reference (the strict profile refuses such input instead)"
            )
        if "decode-escaped-slash" in self.rules and "reject-escaped-slash" in self.rules:
            raise ValueError("decode-escaped-slash and reject-escaped-slash exclude each other")
        # Lists and strings as given by front ends, kept as tuples of specs: a hashable value.
        for name in ("drop_params", "keep_params"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                object.__setattr__(self, name, params.split_specs(value))
        params.matcher(self.drop_params, self.keep_params)  # ValueError for a bad spec

    @classmethod
    def profile(cls, name: str) -> Policy:
        """A named profile: ``rfc3986`` (default), ``rfc2396``, ``crawler`` or ``strict``."""
        try:
            rules = PROFILES[name]
        except KeyError:
            raise ValueError(
                f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}"
            ) from None
        return cls(
            rules=rules, name=name, strict=name == "strict", unreserved_2396=name == "rfc2396"
        )

    def with_rules(self, spec: str) -> Policy:
        """Switch rules on and off: ``"+merge-slashes,-remove-dot-segments"``.

        A bare name switches it on.  Raises `ValueError` naming an unknown rule.
        """
        rules = set(self.rules)
        for item in filter(str.strip, spec.split(",")):
            m = _RULE_SPEC.fullmatch(item)
            if not m or m.group(2) not in RULES_BY_NAME:
                raise ValueError(f"unknown rule {item.strip()!r}; known: {', '.join(RULE_NAMES)}")
            sign, name = m.groups()
            if sign == "-":
                rules.discard(name)
            else:
                rules.add(name)
                # The two escaped-slash actions exclude each other: the later one wins.
                other = {
                    "decode-escaped-slash": "reject-escaped-slash",
                    "reject-escaped-slash": "decode-escaped-slash",
                }.get(name)
                rules.discard(other or "")
        return replace(self, rules=frozenset(rules))

    def with_params(self, drop: str | Iterable[str] = (), keep: str | Iterable[str] = ()) -> Policy:
        """Add parameter specs (``"utm_*,fbclid"``, ``"example.com:ref,src"``; a string may
        hold several, separated by ";") and switch ``drop-params`` on.  ``keep`` specs are an
        allowlist for the hosts they cover.  Raises `ValueError` for a bad spec."""
        return replace(
            self,
            rules=self.rules | {"drop-params"},
            drop_params=self.drop_params + params.split_specs(drop),
            keep_params=self.keep_params + params.split_specs(keep),
        )

    def enabled(self, rule: str) -> bool:
        """Whether the rule called ``rule`` runs under this policy."""
        return rule in self.rules

    def param_tests(self, host: str | None) -> params.HostTests:
        """What ``drop-params`` drops on ``host`` (nothing when the rule is off)."""
        if "drop-params" not in self.rules:
            return _NOTHING
        return params.matcher(self.drop_params, self.keep_params).for_host(host)

    @property
    def params_by_host(self) -> bool:
        """Whether a parameter spec is scoped by host (``example.com:ref``): else drop-params
        drops the same parameters on every host."""
        return params.matcher(self.drop_params, self.keep_params).by_host

    def drops_param(self, name: str, host: str | None = None) -> bool:
        """Whether ``drop-params`` drops a query parameter called ``name`` on ``host``."""
        test = params.matcher(self.drop_params, self.keep_params).for_host(host).query
        return test is not None and test(name)

    @property
    def lossy(self) -> bool:
        """True when some rule that may change what the server sees is on."""
        return not self.rules <= _MEANING_KEPT


_NOTHING = params.HostTests(None, None)

DEFAULT_POLICY = Policy()
