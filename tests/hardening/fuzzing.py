"""The fuzz target shared by the hypothesis tests and the atheris runner (tools/fuzz.py).

`check(data, policy, form)` runs `canonicalize` and raises AssertionError on any broken
invariant; any other exception is a crash.  Inputs that break something are saved under
tests/data/fuzz/ so that they become regression cases (test_fuzz.py replays them all).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from urlsan.core import InvalidTarget, Policy, Result, canonicalize
from urlsan.core.policy import REQUIRED_RULES

FUZZ_DATA = Path(__file__).resolve().parents[1] / "data" / "fuzz"
FORMS = ("auto", "origin", "absolute", "authority", "asterisk", "reference")

# Every profile, and the opt-in rules, alone and together (the two escaped-slash actions apart).
POLICIES: dict[str, Policy] = {
    "rfc3986": Policy.profile("rfc3986"),
    "rfc2396": Policy.profile("rfc2396"),
    "crawler": Policy.profile("crawler"),
    "strict": Policy.profile("strict"),
    "addon": Policy.profile("rfc3986").with_rules("+strip-fragment"),
    "opt-in": Policy.profile("rfc3986").with_rules(
        "+strip-fragment,+backslash-as-slash,+decode-escaped-slash,+merge-slashes,"
        "+numeric-host,+strip-host-dot,+drop-params,+sort-query,+drop-empty-query"
    ),
    "reject-escaped-slash": Policy.profile("rfc3986").with_rules("+reject-escaped-slash"),
    "nothing": Policy(rules=REQUIRED_RULES),  # only the repairs the output cannot do without
}
POLICY_NAMES = tuple(POLICIES)

# Where a raw byte may stand in a canonical result: RFC 3986's characters, visible ASCII only.
_URI_CHARS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"
)


def may_raise(policy: Policy) -> bool:
    return policy.strict or "reject-escaped-slash" in policy.rules


def check(data: bytes | str, policy_name: str, form: str) -> None:
    policy = POLICIES[policy_name]
    try:
        result = canonicalize(data, policy, form=form)
    except InvalidTarget:
        assert may_raise(policy), "InvalidTarget outside strict / reject-escaped-slash"
        return
    text = data if isinstance(data, str) else data.decode("utf-8", "surrogateescape")
    assert result.input == text
    for edit in result.edits:
        assert 0 <= edit.start <= edit.end <= len(text), edit
    if form != "asterisk" and policy.rules >= {
        "encode-unsafe",
        "encode-non-ascii",
        "encode-stray-percent",
    }:
        bad = set(result.url) - _URI_CHARS
        assert not bad, f"characters outside RFC 3986 in the result: {sorted(bad)!r}"
    # Idempotence: the canonical form is a fixed point of the same policy and form.
    try:
        again: Result | None = canonicalize(result.url, policy, form=form)
    except InvalidTarget:
        again = None
    assert again is not None and again.url == result.url, (
        f"not idempotent: {result.url!r} -> {'InvalidTarget' if again is None else repr(again.url)}"
    )


def save(data: bytes | str, kind: str) -> Path:
    """Keep an input that broke something, named by its hash (idempotent)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
    FUZZ_DATA.mkdir(parents=True, exist_ok=True)
    path = FUZZ_DATA / f"{kind}-{hashlib.sha1(raw).hexdigest()[:16]}.bin"
    if not path.exists() and os.environ.get("URLSAN_FUZZ_SAVE", "1") != "0":
        path.write_bytes(raw)
    return path


# The last failing input: hypothesis replays its minimal example last, so this is the one to keep.
LAST_FAILURE: list[tuple[bytes | str, str]] = []


def check_and_save(data: bytes | str, policy_name: str, form: str) -> None:
    """`check`, remembering a failing input for `save_last_failure`."""
    try:
        check(data, policy_name, form)
    except AssertionError:
        LAST_FAILURE[:] = [(data, "invariant")]
        raise
    except Exception:
        LAST_FAILURE[:] = [(data, "crash")]
        raise


def save_last_failure() -> Path | None:
    if not LAST_FAILURE:
        return None
    data, kind = LAST_FAILURE.pop()
    return save(data, kind)
