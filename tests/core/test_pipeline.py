"""The pipeline is the one statement of the rule order: the driver walks it, RULES follows it."""

from __future__ import annotations

import pytest

from urlsan.core import RULES, Policy, canonicalize
from urlsan.core.driver import _HANDLERS
from urlsan.core.pipeline import (
    CHARACTERS,
    COMPONENTS,
    PIPELINE,
    TWIN_AFTER,
    TWIN_DECLINES,
    TWIN_NONE,
    TWIN_SWITCH,
    twin_disagreements,
)
from urlsan.core.policy import RULES_BY_NAME


def test_every_step_has_its_handler_and_no_handler_is_idle() -> None:
    assert set(_HANDLERS) == {(s.component, s.name, s.when) for s in PIPELINE}


def test_components_run_in_output_order() -> None:
    assert COMPONENTS == ("scheme", "userinfo", "host", "port", "path", "query", "fragment")
    order = [COMPONENTS.index(s.component) for s in PIPELINE]
    assert order == sorted(order)


def test_rules_follow_the_pipeline() -> None:
    first_seen = list(dict.fromkeys(r for step in PIPELINE for r in step.rules))
    assert [r.name for r in RULES] == first_seen
    assert set(RULES_BY_NAME) == set(first_seen)
    assert all(step.name == CHARACTERS or step.rules == (step.name,) for step in PIPELINE)


def _rank(component: str, rule: str) -> int:
    for i, step in enumerate(PIPELINE):
        if step.component == component and rule in step.rules:
            return i
    raise AssertionError((component, rule))


# Targets on which several rules of one component fire: their edits come in pipeline order.
@pytest.mark.parametrize(
    ("target", "rules"),
    [
        ("HTTP://EXAMPLE.com.:080/%7e", "+strip-host-dot"),
        ("http://0x7F.1:/", "+numeric-host"),
        ("/a\\b//./c/../%7e", "+backslash-as-slash,+merge-slashes"),
        ("/a;jsessionid=1/../b?z=1&utm_source=x&a=2&", "+drop-params,+sort-query"),
        ("/?", "+drop-empty-query"),
        ("/#%7e", "+strip-fragment"),
        ("a", ""),
    ],
)
def test_edits_come_in_pipeline_order(target: str, rules: str) -> None:
    policy = Policy().with_rules(rules) if rules else Policy()
    edits = canonicalize(target, policy, form="auto").edits
    ranks = [
        (COMPONENTS.index(e.component), min(_rank(e.component, r) for r in e.rules)) for e in edits
    ]
    assert ranks == sorted(ranks), edits


def _flags() -> dict[str, int]:
    """The twin's switches as the declarations say they are: one bit per switch, one bit shared
    by the rules it declines for, 0 for the others."""
    bits = {TWIN_SWITCH: 0, TWIN_DECLINES: 1 << 20, TWIN_AFTER: 0, TWIN_NONE: 0}
    flags = {}
    for i, rule in enumerate(RULES):
        flags[rule.name] = 1 << i if rule.twin == TWIN_SWITCH else bits[rule.twin]
    return flags


def test_the_declared_twin_agrees_with_itself() -> None:
    assert twin_disagreements(_flags()) == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"merge-slashes": 0}, "merge-slashes: declared 'switch'"),  # its switch lost
        ({"idna-host": 1 << 25}, "idna-host: declared 'none'"),  # a switch the entry lacks
        ({"sort-query": 1 << 20}, "sort-query: declared 'after'"),  # joined the declining bit
        ({"lowercase-host": 1 << 0}, "lowercase-host: declared 'switch'"),  # shares a bit
        ({"no-such-rule": 1}, "no-such-rule: not a declared rule"),
    ],
)
def test_a_twin_that_disagrees_is_named(change: dict[str, int], says: str) -> None:
    wrong = twin_disagreements(_flags() | change)
    assert any(line.startswith(says) for line in wrong), wrong


def test_a_rule_the_twin_lacks_is_named() -> None:
    flags = _flags()
    del flags["dot-prefix"]
    assert twin_disagreements(flags) == ["dot-prefix: missing from the twin"]


def test_the_compiled_twin_agrees_with_the_declarations() -> None:
    """Checked when the twin loads (compiled.py), and here on the extension itself, loaded or
    not: CI builds it."""
    from urlsan.core import _speedups

    assert twin_disagreements(_speedups.FLAGS) == []
