"""One request-target through `urlsan.core`, reduced to what the addon keeps: `check_target`.

Pure and free of mitmproxy, so that the addon can run it inline for ordinary targets and in a
worker process for long ones (`UrlSanitizer` decides which).  What it returns is small whatever
the input: the canonical target itself, the first `MAX_EDITS` edits and the findings.  A hostile
megabyte can carry a million edits; they are dropped here, in the worker, and never cross into
the proxy's process or into `flow.metadata`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from operator import itemgetter
from typing import NamedTuple

from ..audit.record import MAX_EDITS
from ..core import Edit, Finding, InvalidTarget, Policy, canonicalize, canonicalize_authority
from ..core.compiled import fields_as_slots
from ..core.result import FOLD_AFTER, rule_names

# RFC 9112 §3.2: every request-target we assign must be visible ASCII only.  mitmproxy writes
# whatever bytes it is given into the request line, so a canonical target that failed this check
# (a bug in core) must never reach the wire: it would be a request-splitting vector.
_VISIBLE = bytes(range(0x21, 0x7F))


def wire_safe(data: bytes) -> bool:
    """Whether ``data`` is one or more visible ASCII bytes (``[\\x21-\\x7e]+``).

    ``translate`` deletes them in one pass: several times faster than a regex on a megabyte.  A
    hostile megabyte usually shows itself in its first bytes: those are looked at first, so that
    the megabyte is not copied to find out.
    """
    if len(data) > _FIRST and data[:_FIRST].translate(None, _VISIBLE):
        return False
    return bool(data) and not data.translate(None, _VISIBLE)


_FIRST = 4096  # bytes wire_safe looks at before the whole


# A Host header or authority that is more than host[:port] (userinfo, a path, a query, spaces) is
# mitmproxy's to refuse, not ours to repair: it is left alone.
_NOT_BARE = re.compile(r"[/?#@\s]")


HostCheck = Callable[[str, str], tuple[str, tuple[Edit, ...]]]  # (value, scheme) -> canonical


def _check_host(value: str, scheme: str, policy: Policy) -> tuple[str, tuple[Edit, ...]]:
    if not _NOT_BARE.search(value):
        result = canonicalize_authority(value, policy, scheme=scheme)
        canonical = result.url
        if canonical != value and wire_safe(canonical.encode("ascii", "replace")):
            return canonical, result.edits
    return value, ()


# RFC 1035 §2.3.4: a name is at most 255 octets; with a port, an IP-literal's brackets: a longer
# Host is no host a cache would see twice, and is not kept in one (a client chooses its length).
MAX_CACHED_HOST = 255 + len(":65535")


def host_check(policy: Policy) -> HostCheck:
    """A function of (value, scheme) giving the canonical form of a Host header or authority
    under ``policy`` and its edits (offsets into ``value``): ``value`` itself when it is not a
    bare host[:port], or when its canonical form would not be wire-safe.  Cached, with a cache
    of its own: a proxy sees the same few hosts over and over, and its hot path then never hashes
    the policy (a frozen dataclass hashes every field, on every call).  A strict ``policy``
    raises `InvalidTarget` (never cached)."""
    cached = lru_cache(maxsize=1024)(partial(_check_host, policy=policy))

    def check(value: str, scheme: str) -> tuple[str, tuple[Edit, ...]]:
        if len(value) > MAX_CACHED_HOST:
            return _check_host(value, scheme, policy)
        return cached(value, scheme)

    return check


@fields_as_slots  # read on every request
class Checked(NamedTuple):
    """What core said about one request-target."""

    input: str  # the target as received, decoded with surrogateescape
    url: str  # the canonical target ("" when refused)
    changed: bool
    edits: tuple[Edit, ...]  # the first MAX_EDITS edits
    edits_total: int  # how many edits there were
    rules: frozenset[str]  # every rule that changed the target, not only in the first edits
    findings: tuple[Finding, ...]
    refused: InvalidTarget | None = None  # the strict policy's (or reject-escaped-slash's) error
    # With a limit (a worker's answer): the whole canonical target as the bytes to send, checked
    # to be wire-safe; ``input`` and ``url`` then hold only their first ``limit`` characters.
    wire: bytes | None = None


def check_target(
    raw: bytes,
    form: str,
    policy: Policy,
    fragment_policy: Policy | None = None,
    lenient: Policy | None = None,
    *,
    limit: int | None = None,
    host: str | None = None,
) -> Checked:
    """Canonicalize ``raw`` with ``policy``; a refusal is returned, never raised.

    ``fragment_policy`` checks a fragment first (strict mode would otherwise never see an invalid
    fragment that strip-fragment drops).  When ``policy`` refuses, ``lenient`` (a policy that
    never raises) supplies the findings.  A worker process passes a ``limit``: it then returns
    the canonical target encoded and checked (`Checked.wire`), and cuts the texts, which are only
    logged, so that the proxy's event loop neither decodes, encodes nor scans megabytes.
    ``host`` is where an origin-form target was sent, for parameter specs scoped by host.
    """
    try:
        if fragment_policy is not None and b"#"[0] in raw:  # an int: core.surt._ia says why
            canonicalize(raw, fragment_policy, form=form, host=host)
        result = canonicalize(raw, policy, form=form, host=host)
    except InvalidTarget as e:
        findings: tuple[Finding, ...] = ()
        text = raw.decode("utf-8", "surrogateescape")[:limit]
        if lenient is not None:
            findings = canonicalize(raw, lenient, form=form, host=host).findings
        return Checked(text, "", False, (), 0, frozenset(), findings, e)
    edits = result.edits
    url = result.url
    changed = url != result.input
    kept = edits[:MAX_EDITS] if len(edits) > MAX_EDITS else edits
    wire = None
    if limit is not None:
        wire = url.encode("ascii")
        if not wire_safe(wire):
            raise ValueError(f"canonical target is not wire-safe: {wire[:200]!r}")
        url = url[:limit]
        kept = tuple(_cut(e, limit) for e in kept)
    # tuple.__new__: a NamedTuple's own __new__ is a Python frame, on every request
    return _new(
        Checked,
        (
            result.input if limit is None else result.input[:limit],
            url,
            changed,
            kept,
            len(edits),
            edit_rules(edits) if edits else _NO_RULES,
            result.findings,
            None,
            wire,
        ),
    )


_new = tuple.__new__


_NO_RULES: frozenset[str] = frozenset()


def _cut(edit: Edit, limit: int) -> Edit:
    # A folded edit (core folds a component's rewrites past the first few dozen) can span a
    # megabyte: only what a record keeps crosses back from the worker.
    if len(edit.before) <= limit and len(edit.after) <= limit:
        return edit
    return edit._replace(before=edit.before[:limit], after=edit.after[:limit])


def edit_rules(edits: Sequence[Edit]) -> frozenset[str]:
    """Every rule that made ``edits``, each rule of a folded edit (`Edit.rules`) on its own."""
    # frozenset(map(itemgetter(0), ...)): the rules read in C, without a comprehension's frame
    # (every request core changes: 1.0 of `check`'s 2.4 µs on dirty targets, before).
    names = frozenset(map(_RULE, edits))
    if not names:
        return _NO_RULES
    # A folded edit names several rules ("a+b"); core folds a component's rewrites only once it
    # holds FOLD_AFTER edits, so fewer edits (every real target) need no look for one.
    if len(edits) < FOLD_AFTER or "+" not in "".join(names):
        return names
    return frozenset(rule for name in names for rule in rule_names(name))


_RULE = itemgetter(0)  # Edit.rule, its first field


# The worker's niceness increment: the lowest priority there is.  Its long targets wait while
# the event loop (and anything else) wants the CPU; at nice 10 it still took a tenth of a busy
# core, and the other clients' p99 rose 1.4-1.6 times behind megabyte targets
# (bench/proxy.py --scenario hostile, on a loaded 2-core machine).  Unlike SCHED_IDLE it is
# never starved outright: a long target is still answered on a machine busy with other work.
LOWEST_PRIORITY = 19


def lower_priority() -> None:
    """A worker process's initializer: it yields the CPU to the proxy's event loop."""
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: no os.nice (Windows)
        os.nice(LOWEST_PRIORITY)
