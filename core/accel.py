"""The accelerated path: the one place that chooses compiled twin, fast path or reference.

For each policy it derives, once, what the accelerators need (the twin's switches, the
already-canonical patterns) and keeps it in a cache beside them, so that `Policy` stays a pure
value.  `fast` answers a target or returns None, and then the reference driver
(`canonical.canonicalize_python`) runs.  Set ``URLSAN_NO_EXTENSIONS=1`` to run without the twin.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, update_wrapper
from typing import NamedTuple

from . import compiled
from .fastpath import fast_patterns
from .policy import DEFAULT_POLICY, DEFAULT_PORTS, QUERY_RULES, Policy
from .result import Result

compiled.setup(DEFAULT_PORTS)


class Derived(NamedTuple):
    """What the accelerators need for one policy."""

    twin: int  # the compiled twin's switches; -1: the twin cannot serve this policy
    query_rules: bool  # some rule of QUERY_RULES is on: run them after the twin
    path_params: bool  # drop-params is on: a ";" in the path may go
    absolute: Callable[[str], object]  # fullmatch of an already-canonical absolute-form target
    origin: Callable[[str], object]  # the same, origin-form


@lru_cache(maxsize=64)
def derived(policy: Policy) -> Derived:
    query_rules = not policy.rules.isdisjoint(QUERY_RULES)
    absolute, origin = fast_patterns(policy.rules, query_rules)
    flags = compiled.flags(policy.rules, policy.strict, policy.unreserved_2396)
    path_params = "drop-params" in policy.rules
    return Derived(flags, query_rules, path_params, absolute.fullmatch, origin.fullmatch)


def twin_flags(policy: Policy) -> int:
    """The compiled twin's switches for ``policy``; -1 when only the reference serves it."""
    return derived(policy).twin


_last: tuple[Policy, Derived] | None = None  # most calls reuse one policy: skip hashing it


def fast(
    target: str,
    policy: Policy,
    form: str,
    host: str | None,
    after_twin: Callable[[Result, Policy, str | None], Result | None] | None,
) -> Result | None:
    """``target`` canonicalized by the twin or found already canonical; None: not here.

    ``after_twin`` runs the query rules the twin leaves out (the driver's own steps; ``host``
    is where an origin-form target was sent), or says (None) that the reference must run
    instead; without it (`canonical_already`) the twin is not asked."""
    global _last
    last = _last
    if last is not None and last[0] is policy:
        d = last[1]
    else:
        d = derived(policy)
        _last = (policy, d)
    twin = compiled.twin
    if twin is not None and after_twin is not None and d.twin >= 0:
        result = twin(target, d.twin, form)
        if result is not None:
            return after_twin(result, policy, host) if d.query_rules else result
    # Already canonical (in line: a call of its own would cost the pure driver one per target).
    # A canonical target is ASCII (§2.5: every other character is escaped); dot segments, and
    # path parameters drop-params may drop, take the full path.
    if target.isascii() and "/." not in target and not (d.path_params and ";" in target):
        # An absolute-form target starts with its scheme, an origin-form one with "/".
        if target[:1] == "/":
            if (form == "auto" or form == "origin") and d.origin(target):
                return Result(target, target)
        elif (form == "auto" or form == "absolute") and d.absolute(target):
            return Result(target, target)
    return None


def canonical_already(target: str, policy: Policy, form: str) -> Result | None:
    """``target`` unchanged when the fast path's patterns find it already canonical."""
    return fast(target, policy, form, None, None)


def entry(
    python: Callable[..., Result],
    declined: Callable[[str, Policy, str, str | None], Result],
    after_twin: Callable[[Result, Policy, str, str | None], Result],
) -> Callable[..., Result]:
    """The public ``canonicalize``: ``python`` (canonical.canonicalize) with the compiled twin
    in front of it, called from C without a Python frame; ``python`` itself without the twin.

    The C entry serves a str target under a `Policy` the twin takes: the twin, then
    ``after_twin`` (the query rules) when the policy has query rules on, or ``declined`` (the
    fast path, then the reference) when the twin declines.  Everything else (bytes, a profile's
    name, a policy the twin cannot serve, a form it does not know) is ``python``'s.  It carries
    ``python``'s name, docstring and signature (``__wrapped__``), for help() and inspect."""
    if compiled.twin is None or compiled.entry is None:
        return python
    switch = vars(compiled)  # compiled.twin = None sets the twin aside here too
    fn = compiled.entry(python, declined, after_twin, derived, DEFAULT_POLICY, Policy, switch)
    return update_wrapper(fn, python)  # type: ignore[no-any-return]
