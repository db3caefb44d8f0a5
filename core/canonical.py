"""`canonicalize`: the one place that chooses what canonicalizes a target.

A str target under a `Policy` goes, in this order, to

1. the compiled twin (core/_speedups.c, loaded by `compiled.py`), when the policy's rules all
   have a switch in it; the query rules (`policy.QUERY_RULES`), which it leaves out, then run
   on its Result (`driver.query_rules_after`);
2. the fast path: a target that `fastpath.py`'s patterns find already canonical is returned as
   it is;
3. the reference driver (`driver.py`), pure Python, which the other two are held to
   (`canonicalize_python`, tests/core/test_speedups.py).

The driver never calls back here.  What the first two need for a policy is derived once
(`derived`) and cached here, so that `Policy` stays a pure value.

With the twin loaded, `canonicalize` is entered in C: `_speedups.entry` makes a function that
serves the twin's targets without a Python frame and calls Python for the rest.  Everything the
twin is handed, its tables and the Python functions that entry calls, is handed over in one
section below ("the hand-over").  ``URLSAN_NO_EXTENSIONS=1`` leaves the twin unloaded, and then
`canonicalize` is the Python function it wraps; ``compiled.twin = None`` sets the twin aside at
run time.  `twin_loaded` and `engine` say whether the twin runs (`urlsan --version`, the
warning of urlsan._about).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache, update_wrapper
from types import FunctionType
from typing import Any, NamedTuple, TypeVar, cast

from . import charsets, compiled
from .driver import (
    canonicalize_authority,
    canonicalize_python,
    policy_of,
    query_rules_after,
    query_rules_url,
    reference,
    text_of,
)
from .fastpath import fast_patterns
from .findings import NFKC_SEPARATORS
from .pipeline import RULES
from .policy import DEFAULT_POLICY, DEFAULT_PORTS, QUERY_RULES, Policy
from .result import FOLD_AFTER, Edit, Finding, InvalidTarget, Result

__all__ = [
    "AsciiTwin",
    "Derived",
    "ascii_twin",
    "canonicalize",
    "canonicalize_authority",
    "canonicalize_python",
    "columns_in_c",
    "derived",
    "engine",
    "twin_flags",
    "twin_loaded",
    "urls_in_c",
]


def twin_loaded() -> bool:
    """Whether `canonicalize` runs the compiled twin first."""
    return compiled.twin is not None


def engine() -> str:
    """The canonicalizer this process runs, in words."""
    if compiled.twin is not None:
        return f"compiled ({compiled.path})"
    if os.environ.get("URLSAN_NO_EXTENSIONS"):
        return "pure Python (URLSAN_NO_EXTENSIONS is set)"
    return "pure Python: the compiled twin urlsan.core._speedups is not installed"


class Derived(NamedTuple):
    """What the compiled twin and the fast path need for one policy.  The compiled entry reads
    the first two fields (`_speedups.c`, entry_flags)."""

    twin: int  # the compiled twin's switches; -1: the twin cannot serve this policy
    query_rules: bool  # some rule of QUERY_RULES is on: run them after the twin
    path_params: bool  # drop-params is on: a ";" in the path may go
    absolute: Callable[[str], object]  # fullmatch of an already-canonical absolute-form target
    origin: Callable[[str], object]  # the same, origin-form


@lru_cache(maxsize=64)
def derived(policy: Policy) -> Derived:
    query_rules = not policy.rules.isdisjoint(QUERY_RULES)
    absolute, origin = fast_patterns(policy.rules, query_rules)
    path_params = "drop-params" in policy.rules
    return Derived(
        _switches(policy), query_rules, path_params, absolute.fullmatch, origin.fullmatch
    )


def _switches(policy: Policy) -> int:
    """The twin's switches for ``policy``; -1 when it cannot serve it (or there is no twin).
    Under a strict policy the twin raises the `InvalidTarget` the reference raises."""
    if compiled.twin is None or not policy.rules <= compiled._flags.keys():
        return -1
    bits = (compiled._unreserved_2396 if policy.unreserved_2396 else 0) | (
        compiled._strict if policy.strict else 0
    )
    for rule in policy.rules:
        bits |= compiled._flags[rule]
    return bits


# What `ascii_twin` gives a C loop: the twin's capsule, a policy's switches, its query rules'
# function (or None) and the policy.
AsciiTwin = tuple[object, int, Callable[..., Any] | None, Policy]


def ascii_twin(policy: Policy) -> AsciiTwin | None:
    """What a C loop over UTF-8 buffers (the Arrow column loop, core/_columns.c) needs to
    canonicalize an ASCII row as ``canonicalize(row, policy).url`` gives it, with the twin and
    without a Result (core/_twin.h): the twin's capsule, ``policy``'s switches, the function
    that runs its query rules on the twin's URL (`driver.query_rules_url`; None when it has
    none) and ``policy``.  None when the twin is off or cannot serve ``policy``: then every row
    is ``canonicalize``'s."""
    if compiled.twin is None or compiled.ascii_url is None:
        return None
    d = derived(policy)
    if d.twin < 0:
        return None
    return compiled.ascii_url, d.twin, query_rules_url if d.query_rules else None, policy


def twin_flags(policy: Policy) -> int:
    """The compiled twin's switches for ``policy``; -1 when only the reference serves it."""
    return derived(policy).twin


_last: tuple[Policy, Derived] | None = None  # most calls reuse one policy: skip hashing it


def _accelerated(
    target: str, policy: Policy, form: str, host: str | None, twin: compiled.Twin | None
) -> Result | None:
    """``target`` canonicalized by ``twin`` (None: the twin is not asked), or found already
    canonical; None: the reference's to do.  ``host``: where an origin-form target was sent,
    for the query rules after the twin."""
    global _last
    last = _last
    if last is not None and last[0] is policy:
        d = last[1]
    else:
        d = derived(policy)
        _last = (policy, d)
    if twin is not None and d.twin >= 0:
        result = twin(target, d.twin, form)
        if result is not None:
            return query_rules_after(result, policy, host) if d.query_rules else result
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


# --- the hand-over: everything the compiled twin is given, given here and nowhere else


def _hand_over_tables() -> None:
    """Hand the twin the tables it walks, so that the grammar is written down only once: the
    result types, the character sets of charsets.py, the default ports, where `Edits` folds,
    the rule order (`pipeline.RULES`), the error type and the characters that NFKC may make a
    separator of (`findings.NFKC_SEPARATORS`: the twin has unicodedata read the segment)."""
    if compiled.setup is None:
        return

    def chars(s: frozenset[str]) -> str:
        return "".join(sorted(s))

    compiled.setup(
        Result,
        Edit,
        Finding,
        chars(charsets.PATH),
        chars(charsets.QUERY),
        chars(charsets.FRAGMENT),
        chars(charsets.UNRESERVED),
        chars(charsets.UNRESERVED_2396),
        DEFAULT_PORTS,
        FOLD_AFTER,
        tuple(rule.name for rule in RULES),
        chars(charsets.USERINFO),
        chars(charsets.REG_NAME),
        InvalidTarget,
        NFKC_SEPARATORS,
    )


def _declined(target: str, policy: Policy, form: str, host: str | None) -> Result:
    """`canonicalize` of a str target that the compiled twin declined: the fast path for an
    already canonical target, then the reference."""
    return _accelerated(target, policy, form, host, None) or reference(target, policy, form, host)


def _after_twin(result: Result, policy: Policy, form: str, host: str | None) -> Result:
    """The query rules on the twin's ``result``, or the reference where they cannot run."""
    return query_rules_after(result, policy, host) or reference(result.input, policy, form, host)


_Python = TypeVar("_Python", bound=Callable[..., Result])


def _entered_in_c(python: _Python) -> _Python:
    """``python``, the public canonicalize, with the compiled twin in front of it, entered in C
    (`_speedups.entry`); ``python`` itself without the twin.

    The C function serves a str or bytes target under a `Policy` whose switches the twin has
    (``derived(policy)``, kept in C by the policy's identity): the twin, then ``_after_twin``
    when the policy has query rules on and the output has a query (or the input a ";"), or
    ``_declined`` when the twin declines.  Everything else (a profile's name, a policy the twin
    cannot serve, a form it does not know, an argument it does not take) is ``python``'s.  It
    reads the switch, ``compiled.twin``, from compiled.py's globals (``vars(compiled)``; again
    only when they change), and carries ``python``'s name, docstring and signature
    (``__wrapped__``) for help(), inspect and pickle."""
    if compiled.twin is None or compiled.entry is None:
        return python
    fn = compiled.entry(
        python, _declined, _after_twin, derived, DEFAULT_POLICY, Policy, vars(compiled)
    )
    return cast(_Python, update_wrapper(fn, python))


_hand_over_tables()


@_entered_in_c
def canonicalize(
    target: str | bytes,
    policy: Policy | str = DEFAULT_POLICY,
    *,
    form: str = "auto",
    host: str | None = None,
) -> Result:
    """The canonical form of a URI-reference or request-target, with every rewrite recorded.

    ``policy`` is a `Policy` or a profile's name (``"crawler"``).  ``form`` names the
    request-target form when the caller knows it (a proxy does): ``origin`` reads "//a" as a
    path, ``authority`` reads "h:443" as host and port.  ``auto`` tells the forms apart by their
    shape.  Never raises for a non-strict policy; a strict one raises `InvalidTarget` where it
    would have to repair, and so does the opt-in ``reject-escaped-slash`` for an escaped or raw
    backslash or slash in the path.  A target that is neither text nor bytes is a `TypeError`.
    ``host``: where an origin-form target was sent (its Host header), for parameter specs
    scoped by host; a target with an authority names its own.
    """
    if type(target) is not str:
        target = text_of(target)
    if type(policy) is not Policy:
        policy = policy_of(policy)
    twin = compiled.twin
    return _accelerated(target, policy, form, host, twin) or reference(target, policy, form, host)


# many.py's loops in C (`_speedups.urls` and `columns`) call the C entry for each URL: they
# come with it, and are None where `canonicalize` is the Python function.
_ENTRY_IN_C = not isinstance(canonicalize, FunctionType)
urls_in_c: Callable[..., list[str]] | None = compiled.urls if _ENTRY_IN_C else None
columns_in_c: Callable[..., Any] | None = compiled.columns if _ENTRY_IN_C else None
