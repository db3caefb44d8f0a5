"""RFC 3986's own examples (tests/data/rfc3986-examples.json): §5.2.4, §5.4 and §6.2.

Reference resolution is not the core's job, so resolver.py transcribes §5.2 for the tests: it
checks that a canonicalized relative reference still resolves to the RFC's answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import resolver

from urlsan.core import canonicalize, rules

DATA = json.loads((Path(__file__).parents[1] / "data" / "rfc3986-examples.json").read_text())
BASE: str = DATA["resolution"]["base"]


def _strict(expected: Any) -> str:
    # §5.4.2 "http:g": strict parsers answer "http:g"; we (and resolver.py) are strict.
    return expected["strict"] if isinstance(expected, dict) else expected


RESOLUTION = [
    pytest.param(ref, _strict(expected), id=f"{kind}:{ref or '<empty>'}")
    for kind in ("normal", "abnormal")
    for ref, expected in DATA["resolution"][kind]
]


@pytest.mark.parametrize(("path", "expected"), DATA["remove_dot_segments"])
def test_remove_dot_segments_examples(path: str, expected: str) -> None:
    assert resolver.remove_dot_segments(path) == expected
    if path.startswith("/"):
        assert rules.remove_dot_segments(path) == (expected, 0)
    else:
        assert rules.remove_dot_segments_relative(path) == expected
    assert canonicalize(path).url == expected


@pytest.mark.parametrize(("ref", "expected"), RESOLUTION)
def test_resolution_examples_the_resolver_agrees(ref: str, expected: str) -> None:
    assert resolver.resolve(BASE, ref) == expected


@pytest.mark.parametrize(("ref", "expected"), RESOLUTION)
def test_canonical_reference_resolves_to_the_same_target(ref: str, expected: str) -> None:
    # Canonicalizing the reference before resolving it must not change where it leads.
    canonical_ref = canonicalize(ref).url
    resolved = resolver.resolve(BASE, canonical_ref)
    assert canonicalize(resolved).url == canonicalize(expected).url, canonical_ref


@pytest.mark.parametrize(("ref", "expected"), RESOLUTION)
def test_resolved_examples_are_canonical_but_for_empty_path(ref: str, expected: str) -> None:
    # Every answer in §5.4 is already in normal form, except "http://g" (§6.2.3: empty path "/").
    canonical = canonicalize(expected)
    if expected == "http://g":
        assert canonical.url == "http://g/"
    else:
        assert canonical.url == expected
        assert canonical.edits == ()


GROUPS = [
    pytest.param(group, id=f"{group['section']}:{group['members'][0]}")
    for group in DATA["normalization"]
]


@pytest.mark.parametrize("group", GROUPS)
def test_normalization_groups(group: dict[str, Any]) -> None:
    forms = {canonicalize(member).url for member in group["members"]}
    if not group["equivalent"]:
        # §6.2.3: "http://example.com/?" and "http://example.com/" must not be assumed equal.
        assert len(forms) == len(group["members"])
    elif "scheme-specific" in group.get("rule", ""):
        # §6.2.3 scheme-based normalization of mailto's domain is out of scope: the canonicalizer
        # applies the generic syntax only, and a path is case-sensitive (docs/conformance.md).
        assert len(forms) == len(group["members"])
    else:
        assert len(forms) == 1, forms
        if group["normal_form"] is not None:
            assert forms == {group["normal_form"]}
