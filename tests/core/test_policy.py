"""`Policy`: the rule table, the named profiles, and switching rules on and off."""

from __future__ import annotations

import dataclasses

import pytest

from urlsan.core import RULES, InvalidTarget, Policy, canonicalize
from urlsan.core.driver import canonicalize_python
from urlsan.core.policy import DEFAULT_POLICY, PROFILES, REQUIRED_RULES, RULE_NAMES

LOSSY = {
    "strip-fragment",
    "strip-host-dot",
    "numeric-host",
    "backslash-as-slash",
    "decode-escaped-slash",
    "reject-escaped-slash",
    "merge-slashes",
    "drop-params",
    "sort-query",
    "drop-empty-query",
}


def test_rule_names_are_unique_and_documented() -> None:
    assert len(RULE_NAMES) == len(set(RULE_NAMES))
    for rule in RULES:
        assert rule.section, rule
        assert rule.summary, rule


def test_lossy_rules_are_exactly_the_opt_in_ones() -> None:
    assert {r.name for r in RULES if r.lossy} == LOSSY


def test_default_profile_is_rfc3986_and_meaning_preserving() -> None:
    assert Policy() == DEFAULT_POLICY == Policy.profile("rfc3986")
    assert DEFAULT_POLICY.rules == frozenset(RULE_NAMES) - LOSSY
    assert not DEFAULT_POLICY.lossy
    assert not DEFAULT_POLICY.strict


@pytest.mark.parametrize("name", ["rfc3986", "rfc2396", "strict"])
def test_meaning_preserving_profiles(name: str) -> None:
    policy = Policy.profile(name)
    assert not policy.lossy
    assert policy.name == name


def test_crawler_profile_is_lossy() -> None:
    crawler = Policy.profile("crawler")
    assert crawler.lossy
    assert {"strip-fragment", "sort-query", "drop-params", "drop-empty-query"} <= crawler.rules
    assert "reject-escaped-slash" not in crawler.rules


def test_profiles_listed() -> None:
    assert set(PROFILES) == {"rfc3986", "rfc2396", "crawler", "strict"}


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="unknown profile 'nope'"):
        Policy.profile("nope")


def test_with_rules_switches_on_and_off() -> None:
    policy = Policy().with_rules("+merge-slashes, -remove-dot-segments")
    assert "merge-slashes" in policy.rules
    assert "remove-dot-segments" not in policy.rules
    assert policy.lossy
    assert canonicalize("//a//./b", policy, form="origin").url == "/a/./b"


def test_with_rules_bare_name_switches_on() -> None:
    assert Policy().with_rules("sort-query").enabled("sort-query")


def test_with_rules_is_immutable() -> None:
    policy = Policy()
    policy.with_rules("+merge-slashes")
    assert "merge-slashes" not in policy.rules
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.strict = True  # type: ignore[misc]


@pytest.mark.parametrize("spec", ["+nope", "merge_slashes", "+", "++merge-slashes"])
def test_with_rules_unknown(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown rule"):
        Policy().with_rules(spec)


def test_unknown_rule_in_constructor() -> None:
    with pytest.raises(ValueError, match="unknown rule"):
        Policy(rules=frozenset({"nope"}))


def test_escaped_slash_actions_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="exclude each other"):
        Policy(rules=REQUIRED_RULES | {"decode-escaped-slash", "reject-escaped-slash"})
    later_wins = Policy().with_rules("+decode-escaped-slash,+reject-escaped-slash")
    assert "reject-escaped-slash" in later_wins.rules
    assert "decode-escaped-slash" not in later_wins.rules


def test_with_rules_keeps_profile_settings() -> None:
    policy = Policy.profile("rfc2396").with_rules("+sort-query")
    assert policy.unreserved_2396
    assert canonicalize("/%21?b&a", policy).url == "/!?a&b"
    strict = Policy.profile("strict").with_rules("-remove-dot-segments")
    assert strict.strict
    with pytest.raises(InvalidTarget):
        canonicalize("/a b", strict)


def test_drop_params_patterns() -> None:
    policy = Policy(drop_params=("utm_*", "sid")).with_rules("+drop-params")
    assert policy.drops_param("utm_source")
    assert policy.drops_param("sid")
    assert not policy.drops_param("sidx")
    # Names match without regard to case: PHPSESSID and phpsessid are the same tracker.
    assert policy.drops_param("UTM_source")
    assert canonicalize("/?a=1&utm_x=2&sid=3&b", policy).url == "/?a=1&b"
    assert canonicalize("/?utm_x=2", policy).url == "/"


def test_crawler_drops_session_ids_in_query_and_path() -> None:
    crawler = Policy.profile("crawler")
    for name in ("PHPSESSID", "jsessionid", "sid", "sessionid", "utm_campaign", "gclid"):
        assert crawler.drops_param(name), name
    r = canonicalize("http://h/shop;jsessionid=A1B2/cart?PHPSESSID=x&item=3", crawler)
    assert r.url == "http://h/shop/cart?item=3"
    assert [e.rule for e in r.edits] == ["drop-params", "drop-params"]
    assert [e.component for e in r.edits] == ["path", "query"]
    # Before dot removal: "..;jsessionid=1" is the ".." a servlet container reads it as.
    assert canonicalize("/a/b/..;jsessionid=1/c", crawler).url == "/a/c"
    # Other path parameters stay: they may select the resource.
    assert canonicalize("/a;type=d/b", crawler).url == "/a;type=d/b"


def test_host_scoped_and_allowlisted_params() -> None:
    policy = Policy.profile("rfc3986").with_params(drop="example.com:ref,src")
    assert policy.rules >= {"drop-params"}
    assert canonicalize("http://www.example.com/?ref=1&q=2", policy).url == (
        "http://www.example.com/?q=2"
    )
    assert canonicalize("http://example.org/?ref=1", policy).url == "http://example.org/?ref=1"
    # An origin-form target names no host: the caller says where it was sent (a proxy knows).
    assert canonicalize("/?ref=1&q=2", policy, host="WWW.example.com").url == "/?q=2"
    assert canonicalize("/?ref=1&q=2", policy).url == "/?ref=1&q=2"
    assert canonicalize_python("/x;ref=1/a?ref=1", policy, host="example.com").url == "/x/a"
    keep = Policy(drop_params=()).with_params(keep="shop.example:id,page")
    assert canonicalize("http://shop.example/p?id=1&x=2&PAGE=3", keep).url == (
        "http://shop.example/p?id=1&PAGE=3"
    )
    assert canonicalize("http://other.example/p?x=2", keep).url == "http://other.example/p?x=2"
    # An explicit keep wins over a drop pattern; several specs in one string, split on ";".
    both = Policy.profile("crawler").with_params(keep="h.example:sid,q;other.example:a")
    assert canonicalize("http://h.example/?sid=1&q=2&z=3", both).url == (
        "http://h.example/?q=2&sid=1"
    )
    with pytest.raises(ValueError, match="bad parameter spec"):
        Policy().with_params(drop="a:b:c")
    assert Policy(drop_params=["x", "y"]).drop_params == ("x", "y")  # type: ignore[arg-type]


def test_no_drop_params_patterns() -> None:
    policy = Policy(drop_params=()).with_rules("+drop-params")
    assert not policy.drops_param("utm_source")
    assert canonicalize("/?utm_source=1", policy).url == "/?utm_source=1"


_SWITCHABLE = [name for name in RULE_NAMES if name not in REQUIRED_RULES]


@pytest.mark.parametrize("name", _SWITCHABLE)
def test_every_rule_can_be_switched_off(name: str) -> None:
    # Switching any one rule off never breaks the output (beyond that rule's own change).
    policy = Policy.profile("crawler").with_rules(f"-{name}")
    result = canonicalize(
        "HTTP://U@Ex%41mple.COM.:0080//a/./%2e%2E/b%2f%7e\\c?utm_x=1&b&a#f", policy
    )
    assert result.url.isascii()
    assert not any(name in edit.rules for edit in result.edits)


@pytest.mark.parametrize("name", sorted(REQUIRED_RULES))
def test_rules_the_output_needs_cannot_be_switched_off(name: str) -> None:
    # Without them the output would not be a valid URI-reference; strict refuses instead.
    with pytest.raises(ValueError, match=name):
        Policy().with_rules(f"-{name}")


@pytest.mark.parametrize(
    ("spec", "url"),
    [
        ("-decode-unreserved", "/%7E%2F"),  # escapes of unreserved characters kept (uppercased)
        ("-uppercase-escape", "/~%2f"),  # hex case kept
        ("-decode-unreserved,-uppercase-escape", "/%7e%2f"),
    ],
)
def test_character_rules_honour_their_switch(spec: str, url: str) -> None:
    policy = Policy().with_rules(spec)
    assert canonicalize("/%7e%2f", policy).url == url
    assert canonicalize(url, policy).edits == ()  # and the result is canonical for that policy


# The repairs without which an output is no URI-reference (docs/rules.md, Profiles).
REPAIRS = ("encode-stray-percent", "encode-unsafe", "encode-non-ascii", "dot-prefix")


@pytest.mark.parametrize("rule", REPAIRS)
def test_a_required_repair_cannot_be_switched_off(rule: str) -> None:
    """No profile drops a repair, and switching one off is refused, naming it."""
    assert rule in REQUIRED_RULES
    assert all(rule in on for on in PROFILES.values())
    with pytest.raises(ValueError, match=f"{rule} cannot be switched off"):
        Policy().with_rules(f"-{rule}")
