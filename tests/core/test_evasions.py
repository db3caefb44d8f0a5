"""Evasions in the URL itself, one family at a time (tests/core/evasions.json, written by us):
each is reported by the finding that names it, at its severity or above, by the compiled twin
exactly as by the reference; real URLs that carry no evasion are left without a finding of
medium severity or above."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from urlsan.core import Policy, Result, canonicalize
from urlsan.core.canonical import canonicalize_python
from urlsan.core.severity import assess
from urlsan.core.taxonomy import rank

EVASIONS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "evasions.json").read_text(encoding="utf-8")
)


def checked(target: str, policy: Policy | None = None) -> Result:
    """``target`` as the proxy reads it: a target starting with "/" is origin-form ("//.." is a
    path, not an authority)."""
    form = "origin" if target.startswith("/") else "auto"
    return canonicalize(target, policy or Policy(), form=form)


def top_severity(target: str) -> int:
    return max((rank(f.severity) for f in checked(target).findings), default=-1)


def target_severity(target: str) -> str:
    result = checked(target)
    found = assess(result.input, result.findings)
    return found.level if found else ""


@pytest.mark.parametrize("case", EVASIONS, ids=[c["target"] for c in EVASIONS])
def test_every_evasion_is_reported(case: dict[str, Any]) -> None:
    target = case["target"]
    result = checked(target)
    assert case["finding"] in {f.rule for f in result.findings}, result.findings
    assert top_severity(target) >= rank(case["severity"]), result.findings
    for policy in (Policy(), Policy.profile("crawler")):
        form = "origin" if target.startswith("/") else "auto"
        assert checked(target, policy) == canonicalize_python(target, policy, form=form)


@pytest.mark.parametrize("case", EVASIONS, ids=[c["target"] for c in EVASIONS])
def test_every_evasion_is_ranked_by_its_worst_reader(case: dict[str, Any]) -> None:
    """The target's severity, from the compiled twin's Result: the corpus says which reader
    class each case belongs to (docs/findings.md, Target severity)."""
    assert target_severity(case["target"]) == case["target_severity"]


def test_every_evasion_family_reaches_medium() -> None:
    """Each family of URL-level evasions has every target at medium or above; the families
    that are only mangled text (a stray "%", a raw space or tab, Latin-1 bytes) stay low."""
    low = {c["family"] for c in EVASIONS if rank(c["target_severity"]) < rank("medium")}
    assert low == {"stray-percent", "raw-space", "control-char", "invalid-utf8"}
    families = {c["family"] for c in EVASIONS} - low
    for family in families:
        cases = [c for c in EVASIONS if c["family"] == family]
        assert all(rank(target_severity(c["target"])) >= rank("medium") for c in cases), family


def test_the_corpus_holds_every_family() -> None:
    families = {c["family"] for c in EVASIONS}
    assert len(families) >= 24
    assert {"double-encoded-hex-digits", "backslash-separated-dot-segments"} <= families
    assert {
        "crlf-in-query", "merged-slash-traversal", "backslash-traversal", "slash-dot-dot-slash",
        "escaped-backslash-dotdot",
    } <= families  # fmt: skip


@pytest.mark.parametrize("case", EVASIONS, ids=[c["target"] for c in EVASIONS])
def test_the_canonical_form_keeps_the_evasion_visible(case: dict[str, Any]) -> None:
    """Canonicalizing an evasion does not hide it: the canonical form is a fixed point, and a
    double encoding stays one ("%%32%65" is written "%2532%65", reported again)."""
    once = checked(case["target"]).url
    again = checked(once)
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


# Real URLs with a finding that no reader turns into a climb or a hidden character: an old
# site's "\%20" path, a DOI's "%2F", mangled text.
BENIGN_FINDINGS = [
    "http://www.example.edu/~smith/My\\%20Documents/paper.pdf",
    "https://link.springer.com/chapter/10.1007%2F978-1-4471-6374-9_5",
    "https://example.com/search/caf%E9",
    "https://example.com/a b/c.html",
    "https://example.com/docs/../guide/index.html",
]


@pytest.mark.parametrize("target", BENIGN)
def test_real_urls_stay_below_medium(target: str) -> None:
    assert top_severity(target) < rank("medium"), canonicalize(target).findings
    assert canonicalize(target) == canonicalize_python(target)
    assert rank(target_severity(target)) < rank("medium")


@pytest.mark.parametrize("target", BENIGN_FINDINGS)
def test_benign_findings_stay_low(target: str) -> None:
    assert checked(target).findings
    assert target_severity(target) == "low"
