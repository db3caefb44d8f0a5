"""The rules, and the order they run in, as data: what the driver (`driver.py`) walks.

`PIPELINE` is the one statement of the order: the components in output order, and within each
its steps.  `RULES` (the rule table of README, Rules, and of ``urlsan rules``) follows it; the
compiled twin is checked against it when it is set up (`canonical.py`, the hand-over).

Character rules run as one pass over a component (`CHARACTERS`), so that each escape is decoded
at most once ("%2541" stays "%2541"); in the path that pass also decodes or refuses escaped
slashes.
"""

from __future__ import annotations

from typing import NamedTuple


class Rule(NamedTuple):
    name: str
    section: str  # the RFC section that licenses it
    lossy: bool  # True: may change what the origin server sees
    summary: str


class Step(NamedTuple):
    """One step of the driver: ``rules`` applied to ``component``; ``when`` narrows it."""

    component: str
    name: str  # the rule, or CHARACTERS
    rules: tuple[str, ...]
    when: str = ""


CHARACTERS = "characters"
CHARACTER_RULES = (
    "decode-unreserved",
    "uppercase-escape",
    "encode-stray-percent",
    "encode-unsafe",
    "encode-non-ascii",
)


def _rule(component: str, name: str, when: str = "") -> Step:
    return Step(component, name, (name,), when)


def _characters(component: str, *extra: str) -> Step:
    return Step(component, CHARACTERS, CHARACTER_RULES + extra)


PIPELINE: tuple[Step, ...] = (
    _rule("scheme", "lowercase-scheme"),
    _characters("userinfo"),
    _rule("host", "idna-host"),
    # Before the character rules, so that its edits are the input's own characters; the host's
    # character pass then decodes "%41" straight to "a".
    _rule("host", "lowercase-host"),
    _characters("host"),
    _rule("host", "strip-host-dot"),
    _rule("host", "numeric-host"),
    _rule("port", "drop-empty-port"),
    _rule("port", "strip-port-zeros"),
    _rule("port", "drop-default-port"),
    _rule("path", "backslash-as-slash"),
    _characters("path", "decode-escaped-slash", "reject-escaped-slash"),
    # Path parameters (";jsessionid=…") before dot segments: "..;jsessionid=1" is then "..".
    _rule("path", "drop-params", "path parameters"),
    _rule("path", "merge-slashes"),
    # RFC 9112 §3.2.1: origin-form is an absolute-path, "" is sent as "/"; before the dot
    # segments, so that "." is resolved as the "/." it is sent as.
    _rule("path", "empty-path", "origin-form"),
    _rule("path", "remove-dot-segments"),
    _rule("path", "empty-path", "with an authority"),
    _rule("path", "dot-prefix"),
    _characters("query"),
    _rule("query", "drop-params", "query parameters"),
    _rule("query", "sort-query"),
    _rule("query", "drop-empty-query"),
    _rule("fragment", "strip-fragment"),
    _characters("fragment"),
)

COMPONENTS: tuple[str, ...] = tuple(dict.fromkeys(step.component for step in PIPELINE))

_CATALOGUE: tuple[Rule, ...] = (
    Rule("lowercase-scheme", "RFC 3986 §3.1, §6.2.2.1", False, "HTTP → http"),
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
    Rule("backslash-as-slash", "WHATWG URL §4.4 (special schemes)", True, "\\ → /"),
    Rule("decode-escaped-slash", "RFC 3986 §2.2", True, "%2F → / in the path"),
    Rule(
        "reject-escaped-slash",
        "RFC 3986 §2.2",
        True,
        "%2F, %5C or a raw \\ in the path raises InvalidTarget",
    ),
    Rule(
        "drop-params",
        "(none: tracking parameters, session IDs)",
        True,
        "drop query (and ;path) parameters a policy names (utm_*, fbclid, jsessionid…)",
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
    Rule("sort-query", "(none)", True, "sort query parameters by name, stably"),
    Rule("drop-empty-query", "RFC 3986 §6.2.3 (not equivalent in general)", True, "/a? → /a"),
    Rule(
        "strip-fragment",
        "RFC 3986 §3.5, RFC 9110 §7.1",
        True,
        "drop the fragment: it is never sent to a server",
    ),
)

_BY_NAME = {rule.name: rule for rule in _CATALOGUE}

# Every rule once, in the order it first runs.
RULES: tuple[Rule, ...] = tuple(
    _BY_NAME[name] for name in dict.fromkeys(r for step in PIPELINE for r in step.rules)
)

if set(_BY_NAME) != {rule.name for rule in RULES}:  # a rule without a step, or the reverse
    raise AssertionError("pipeline.PIPELINE and the rule catalogue name different rules")
