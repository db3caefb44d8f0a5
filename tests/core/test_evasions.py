"""Evasions in the URL itself, one family at a time (tests/core/evasions.json, written by us):
each is reported by the finding that names it, at its severity or above, by the compiled twin
exactly as by the reference; real URLs that carry no evasion are left without a finding of
medium severity or above."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from urlsan.core import Policy, canonicalize
from urlsan.core.canonical import canonicalize_python
from urlsan.core.taxonomy import rank

EVASIONS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "evasions.json").read_text(encoding="utf-8")
)


def top_severity(target: str) -> int:
    return max((rank(f.severity) for f in canonicalize(target).findings), default=-1)


@pytest.mark.parametrize("case", EVASIONS, ids=[c["target"] for c in EVASIONS])
def test_every_evasion_is_reported(case: dict[str, Any]) -> None:
    target = case["target"]
    result = canonicalize(target)
    assert case["finding"] in {f.rule for f in result.findings}, result.findings
    assert top_severity(target) >= rank(case["severity"]), result.findings
    for policy in (Policy(), Policy.profile("crawler")):
        assert canonicalize(target, policy) == canonicalize_python(target, policy)


def test_the_corpus_holds_every_family() -> None:
    families = {c["family"] for c in EVASIONS}
    assert len(families) >= 19
    assert {"double-encoded-hex-digits", "backslash-separated-dot-segments"} <= families


@pytest.mark.parametrize("case", EVASIONS, ids=[c["target"] for c in EVASIONS])
def test_the_canonical_form_keeps_the_evasion_visible(case: dict[str, Any]) -> None:
    """Canonicalizing an evasion does not hide it: the canonical form is a fixed point, and a
    double encoding stays one ("%%32%65" is written "%2532%65", reported again)."""
    once = canonicalize(case["target"]).url
    again = canonicalize(once)
    assert again.url == once
    if case["finding"] == "double-encoding":
        assert "double-encoding" in {f.rule for f in again.findings}


BENIGN = [
    "https://example.com/caf%C3%A9/men%C3%BC",
    "https://example.com/café?q=naïve",
    "https://zh.example.org/wiki/%E4%B8%AD%E6%96%87",
    "https://example.com/wiki/C%2B%2B",
    "https://example.com/login?next=https%3A%2F%2Fexample.com%2Fa%3Fb%3Dc",
    "https://example.com/a?discount=100%25",
    "https://example.com/.well-known/security.txt",
    "https://example.com/~user/index.html",
    "https://example.com/files/archive.tar.gz",
    "https://example.com/a/./b",
    "https://example.com/search?q=a+b&lang=en",
    "https://example.com/%F0%9F%98%80",
]


@pytest.mark.parametrize("target", BENIGN)
def test_real_urls_stay_below_medium(target: str) -> None:
    assert top_severity(target) < rank("medium"), canonicalize(target).findings
    assert canonicalize(target) == canonicalize_python(target)
