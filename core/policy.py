"""The rule table and the immutable `Policy` that selects rules by named profile.

The order of `RULES` is the order the rules run in, within each component (README, Rules).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from . import compiled
from .fastpath import fast_patterns


class Rule(NamedTuple):
    name: str
    section: str  # the RFC section that licenses it
    lossy: bool  # True: may change what the origin server sees
    summary: str


RULES: tuple[Rule, ...] = (
    # Whole-target rules.
    Rule(
        "strip-fragment",
        "RFC 3986 §3.5, RFC 9110 §7.1",
        True,
        "drop the fragment: it is never sent to a server",
    ),
    Rule("lowercase-scheme", "RFC 3986 §3.1, §6.2.2.1", False, "HTTP → http"),
    # Authority.
    Rule("idna-host", "RFC 3986 §3.2.2, UTS 46", False, "non-ASCII host → IDNA A-label"),
    Rule("lowercase-host", "RFC 3986 §3.2.2, §6.2.2.1", False, "Example.COM → example.com"),
    Rule("strip-host-dot", "RFC 1034 §3.1", True, "example.com. → example.com"),
    Rule(
        "numeric-host",
        "WHATWG URL §4.4 (IPv4 parser)",
        True,
        "0x7f.1, 0177.0.0.1, 2130706433 → 127.0.0.1",
    ),
    Rule("drop-empty-port", "RFC 3986 §3.2.3, §6.2.3", False, "host: → host"),
    Rule("strip-port-zeros", "RFC 3986 §3.2.3, §6.2.3", False, ":0080 → :80"),
    Rule("drop-default-port", "RFC 3986 §6.2.3", False, "http://h:80/ → http://h/"),
    # Characters, in every component.
    Rule("decode-unreserved", "RFC 3986 §2.3, §6.2.2.2", False, "%7e → ~, %41 → A"),
    Rule("uppercase-escape", "RFC 3986 §2.1, §6.2.2.1", False, "%2f → %2F"),
    Rule("encode-stray-percent", "RFC 3986 §2.4", False, "a % that starts no escape → %25"),
    Rule(
        "encode-unsafe",
        "RFC 3986 §2, Appendix A; RFC 2396 §2.4.3",
        False,
        'controls, space, "<>, {}|\\^`, [] and other delimiters not allowed here → %XX',
    ),
    Rule(
        "encode-non-ascii",
        "RFC 3986 §2.5, RFC 3987 §3.1",
        False,
        "non-ASCII → its UTF-8 bytes (a raw byte as itself), percent-encoded",
    ),
    # Path.
    Rule("backslash-as-slash", "WHATWG URL §4.4 (special schemes)", True, "\\ → /"),
    Rule("decode-escaped-slash", "RFC 3986 §2.2", True, "%2F → / in the path"),
    Rule(
        "reject-escaped-slash",
        "RFC 3986 §2.2",
        True,
        "%2F, %5C or a raw \\ in the path raises InvalidTarget",
    ),
    Rule("merge-slashes", "(none: nginx merge_slashes)", True, "//a///b → /a/b"),
    Rule("remove-dot-segments", "RFC 3986 §5.2.4, §6.2.2.3", False, "/a/./b/../c → /a/c"),
    Rule(
        "empty-path",
        "RFC 3986 §6.2.3; RFC 9112 §3.2.1",
        False,
        "http://h → http://h/; an origin-form target gains its leading /",
    ),
    Rule(
        "dot-prefix",
        "RFC 3986 §4.2, §5.2.4",
        False,
        "a relative path whose first segment has ':' gains './'; '//a' without authority, '/.'",
    ),
    # Query.
    Rule(
        "drop-params",
        "(none: tracking parameters)",
        True,
        "drop query parameters whose name matches a pattern (utm_*, fbclid…)",
    ),
    Rule("sort-query", "(none)", True, "sort query parameters by name, stably"),
    Rule("drop-empty-query", "RFC 3986 §6.2.3 (not equivalent in general)", True, "/a? → /a"),
)

RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)
RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}

# Repairs without which the output would not be a valid URI-reference (RFC 3986 Appendix A).
REQUIRED_RULES = frozenset(
    {"encode-stray-percent", "encode-unsafe", "encode-non-ascii", "dot-prefix"}
)

_MEANING_KEPT = frozenset(r.name for r in RULES if not r.lossy)

# The rules on a query's parameters: canonical.query_rules, run after the compiled twin too.
QUERY_RULES = frozenset({"drop-params", "sort-query", "drop-empty-query"})

# Tracking parameters a crawler drops before deduplicating (shell-style patterns on the name).
DEFAULT_DROP_PARAMS: tuple[str, ...] = (
    "utm_*",
    "fbclid",
    "gclid",
    "dclid",
    "msclkid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "yclid",
    "igshid",
)

PROFILES: dict[str, frozenset[str]] = {
    "rfc3986": _MEANING_KEPT,
    # RFC 2396 §2.3 counts "!*'()" as unreserved: same rules, wider decode table.
    "rfc2396": _MEANING_KEPT,
    "strict": _MEANING_KEPT,
    "crawler": _MEANING_KEPT
    | {
        "strip-fragment",
        "strip-host-dot",
        "numeric-host",
        "drop-params",
        "sort-query",
        "drop-empty-query",
    },
}

DEFAULT_PORTS: dict[str, str] = {"http": "80", "https": "443", "ws": "80", "wss": "443"}

_RULE_SPEC = re.compile(r"\s*([+-]?)\s*([a-z0-9-]+)\s*")


@dataclass(frozen=True, slots=True)
class Policy:
    """Which rules run.  Build one with `Policy.profile(name)` and adjust with `with_rules`.

    ``strict``: nothing is repaired; input that is not a valid URI-reference raises `InvalidTarget`.
    ``unreserved_2396``: decode RFC 2396's marks ``!*'()`` as unreserved too.
    """

    rules: frozenset[str] = _MEANING_KEPT
    name: str = "rfc3986"
    strict: bool = False
    unreserved_2396: bool = False
    drop_params: tuple[str, ...] = DEFAULT_DROP_PARAMS
    _drop_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    # fullmatch of the fast-path patterns (see fastpath.py): bound once, called per target.
    fast_absolute: Callable[[str], object] = field(init=False, repr=False, compare=False)
    fast_origin: Callable[[str], object] = field(init=False, repr=False, compare=False)
    # The compiled twin's switches for this policy (compiled.py); -1: the Python driver only.
    compiled: int = field(init=False, repr=False, compare=False)
    query_rules: bool = field(init=False, repr=False, compare=False)  # any of QUERY_RULES on

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
        pattern = "|".join(fnmatch.translate(p) for p in self.drop_params) or r"(?!)"
        object.__setattr__(self, "_drop_re", re.compile(pattern))
        query_rules = not self.rules.isdisjoint(QUERY_RULES)
        object.__setattr__(self, "query_rules", query_rules)
        absolute, origin = fast_patterns(self.rules, query_rules)
        object.__setattr__(self, "fast_absolute", absolute.fullmatch)
        object.__setattr__(self, "fast_origin", origin.fullmatch)
        flags = compiled.flags(self.rules, self.strict, self.unreserved_2396)
        object.__setattr__(self, "compiled", flags)

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

    def enabled(self, rule: str) -> bool:
        return rule in self.rules

    def drops_param(self, name: str) -> bool:
        return self._drop_re.match(name) is not None

    @property
    def lossy(self) -> bool:
        """True when some rule that may change what the server sees is on."""
        return not self.rules <= _MEANING_KEPT


DEFAULT_POLICY = Policy()
