"""The pipeline is the one statement of the rule order: the driver walks it, RULES follows it."""

from __future__ import annotations

import pytest

from urlsan.core import RULES, Policy, canonicalize
from urlsan.core.driver import _HANDLERS
from urlsan.core.pipeline import CHARACTERS, COMPONENTS, PIPELINE
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
