"""Cross-checks against test data we did not write (tests/data/SOURCES.md).

Each cross-check counts how many cases we agree on and pins that count, so that a regression (or
an improvement) shows up as a changed number; docs/conformance.md lists every kind of intentional
difference with its reason.  When you change the core on purpose, update the count and the doc.

Peers are compared where their rules and ours mean the same thing: each check picks the urlsan
policy closest to what the peer's function does, and says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

import pytest
import resolver

from urlsan.core import Policy, canonicalize

DATA = Path(__file__).parents[1] / "data"


def _vectors(name: str, func: str) -> list[dict[str, Any]]:
    vectors = json.loads((DATA / name).read_text())["vectors"]
    return [v for v in vectors if v["func"] == func and "result" in v]


def _latin1_json(name: str) -> Any:
    # urlcanon reads its data as latin-1 bytes: "\u0080" is the byte 0x80 (SOURCES.md).
    return json.loads((DATA / "urlcanon" / name).read_bytes().decode("latin1"))


def _agreement(pairs: list[tuple[object, str, str]]) -> tuple[int, list[str]]:
    """(count of ours == theirs, a readable list of the differences)."""
    diffs = [
        f"{case!r}: ours {ours!r}, theirs {theirs!r}"
        for case, ours, theirs in pairs
        if ours != theirs
    ]
    return len(pairs) - len(diffs), diffs


def _check(name: str, pairs: list[tuple[object, str, str]], total: int, agree: int) -> None:
    count, diffs = _agreement(pairs)
    assert len(pairs) == total, f"{name}: {len(pairs)} cases, expected {total}"
    assert count == agree, (
        f"{name}: agreement changed from {agree} to {count} of {total}; if intended, update the "
        "count here and docs/conformance.md. Differences:\n" + "\n".join(diffs)
    )


# --- w3lib canonicalize_url (scrapy's crawler canonicalizer) vs the `crawler` profile.


def test_w3lib_canonicalize_url() -> None:
    # w3lib sorts the query and drops the fragment, like our crawler profile; keep_fragments=True
    # maps to "-strip-fragment".  Calls with encodings or other options have no counterpart.
    crawler = Policy.profile("crawler")
    pairs = []
    for case in _vectors("w3lib-vectors.json", "w3lib.url.canonicalize_url"):
        arg = case["args"][0]
        if isinstance(arg, dict):
            arg = arg["$bytes_latin1"].encode("latin1")
        if not isinstance(arg, str | bytes) or set(case["kwargs"]) - {"keep_fragments"}:
            continue
        policy = crawler.with_rules("-strip-fragment") if case["kwargs"] else crawler
        pairs.append((arg, canonicalize(arg, policy).url, case["result"]))
    _check("w3lib canonicalize_url", pairs, total=70, agree=54)


# --- url-normalize's url_normalize vs the default profile with its extra lossy rules.


def test_url_normalize() -> None:
    # url_normalize also strips a host's trailing dot, drops an empty "?" and merges slashes.
    policy = Policy().with_rules("+strip-host-dot,+drop-empty-query,+merge-slashes")
    pairs = []
    for case in _vectors("url-normalize-vectors.json", "url_normalize.url_normalize"):
        if not case["args"] or not isinstance(case["args"][0], str):
            continue  # url_normalize(None)
        if any(case["kwargs"].get(k) for k in ("filter_params", "default_domain")):
            continue  # parameter allowlists and default domains have no counterpart
        if case["kwargs"].get("default_scheme", "https") != "https":
            continue
        pairs.append((case["args"][0], canonicalize(case["args"][0], policy).url, case["result"]))
    _check("url-normalize", pairs, total=122, agree=101)


# --- rfc3986 (python-hyper) URIReference.normalize vs syntax-based normalization only.


def _unsplit(value: Any) -> str:
    if isinstance(value, dict):
        value = value["$uri"]
    if isinstance(value, str):
        return value
    return resolver.recompose(*value)


def test_rfc3986_uri_reference_normalize() -> None:
    # URIReference.normalize applies §6.2.2 (syntax-based) only: no §6.2.3 default port or empty
    # path, and no IDNA.  Compare with the same subset of our rules.
    policy = Policy().with_rules(
        "-empty-path,-drop-default-port,-drop-empty-port,-strip-port-zeros,-idna-host"
    )
    pairs = []
    for case in _vectors("rfc3986-vectors.json", "URIReference.normalize"):
        arg, expected = _unsplit(case["args"][0]), _unsplit(case["result"])
        pairs.append((arg, canonicalize(arg, policy).url, expected))
    _check("rfc3986 URIReference.normalize", pairs, total=184, agree=171)


# --- urlcanon (Internet Archive): dot segments and idempotence.


def _path_dots() -> list[tuple[str, str, str]]:
    raw = json.loads(
        (DATA / "urlcanon" / "path_dots.json").read_bytes().decode("latin1"),
        object_pairs_hook=list,
    )
    cases = []
    for kind, pairs in raw:
        for path, expected in dict(pairs).items():
            if "\\" in path:
                continue  # WHATWG reads "\" as "/" in special schemes; RFC 3986 does not
            cases.append((kind, path, expected))
    return cases


PATH_DOTS = _path_dots()


def test_urlcanon_path_dots() -> None:
    # The path as an origin-form target; a leading "/." that keeps "//x" from reading as an
    # authority is itself a dot segment, so our output is compared after §5.2.4 once more.
    pairs = []
    for kind, path, expected in PATH_DOTS:
        ours = canonicalize(path, form="origin").url
        pairs.append(((kind, path), resolver.remove_dot_segments(ours), expected))
    _check("urlcanon path_dots", pairs, total=696, agree=696)


@pytest.mark.parametrize("target", sorted(set(_latin1_json("idempotence.json"))))
@pytest.mark.parametrize("profile", ["rfc3986", "crawler"])
def test_urlcanon_idempotence(target: str, profile: str) -> None:
    policy = Policy.profile(profile)
    data = target.encode("latin1")  # a byte string, as urlcanon reads it
    once = canonicalize(data, policy)
    twice = canonicalize(once.url, policy)
    assert twice.url == once.url
    assert twice.edits == ()


# --- WHATWG URL (web-platform-tests urltestdata.json), compared by meaning through ada.


def _ada_view(href: str) -> tuple[object, ...]:
    ada_url = pytest.importorskip("ada_url")
    u = ada_url.parse_url(href)
    return (
        u["protocol"],
        u["username"],
        u["password"],
        u["hostname"],
        u["port"],
        unquote_to_bytes(u["pathname"]),
        unquote_to_bytes(u["search"]),
        unquote_to_bytes(u["hash"]),
    )


@pytest.mark.parametrize(
    ("rules", "agree"),
    [
        ("", 200),
        # WHATWG reads "\\" as "/" in special schemes: our opt-in rule closes 5 of the gaps.
        ("+backslash-as-slash", 205),
    ],
)
def test_whatwg_urltestdata_meaning(rules: str, agree: int) -> None:
    """For http(s) cases WHATWG accepts: does our output lead where the browser goes?

    Our canonical form of the input is parsed by ada (a WHATWG parser), resolved against the
    case's base when there is one, and compared with the expected href field by field, with
    pathname, search and hash percent-decoded: WHATWG and RFC 3986 escape different character
    sets (e.g. "'" in a query), and what matters is the bytes the server gets.
    """
    ada_url = pytest.importorskip("ada_url")
    policy = Policy().with_rules(rules)
    cases = json.loads((DATA / "urltestdata.json").read_text())
    pairs: list[tuple[object, str, str]] = []
    for case in cases:
        if not isinstance(case, dict) or "failure" in case:
            continue
        if case["protocol"] not in ("http:", "https:"):
            continue
        ours = canonicalize(case["input"], policy).url
        try:
            href = ada_url.join_url(case["base"], ours) if case.get("base") else ours
            got = repr(_ada_view(href))
        except ValueError as e:
            got = f"ada refused {ours!r}: {e}"
        pairs.append(((case["input"], case.get("base")), got, repr(_ada_view(case["href"]))))
    _check(f"WHATWG urltestdata (meaning, {rules or 'rfc3986'})", pairs, total=229, agree=agree)
