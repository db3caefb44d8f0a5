"""The compiled twin of `canonical.py` (core/_speedups.c), behind one import, as yarl does it.

The twin handles the targets most traffic is made of: origin-form paths, and http(s)/ws(s) URLs
with an ASCII host. It returns the Result the Python driver returns (or raises its
`InvalidTarget`, under a strict policy), or None for anything else, and then the Python driver
runs. The Python driver stays the reference:
tests/core/test_speedups.py holds the two to the same output. Set ``URLSAN_NO_EXTENSIONS=1`` to
run without the twin. A build without a C compiler installs without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from . import charsets
from .pipeline import RULES
from .result import FOLD_AFTER, Edit, Finding, InvalidTarget, Result

Twin = Callable[[str, int, str], Result | None]

twin: Twin | None = None
declined: Callable[[], str | None] | None = None  # why the twin's last call returned None
entry: Callable[..., Callable[..., Result]] | None = None  # the public canonicalize, in C
urls: Callable[..., list[str]] | None = None  # many.py's loops, in C
columns: Callable[..., tuple[list[Any], list[Any], list[Any]]] | None = None
_flags: dict[str, int] = {}
_unreserved_2396 = 0
_strict = 0

if not os.environ.get("URLSAN_NO_EXTENSIONS"):
    try:
        from . import _speedups
    except ImportError:  # no compiler at install time: the pure-Python driver does it all
        pass
    else:
        twin = _speedups.canonicalize
        declined = _speedups.declined
        entry = _speedups.entry
        urls = _speedups.urls
        columns = _speedups.columns
        _flags = _speedups.FLAGS
        _unreserved_2396 = _speedups.UNRESERVED_2396
        _strict = _speedups.STRICT


def setup(default_ports: dict[str, str]) -> None:
    """Hand the twin the tables it walks, so that the grammar is written down only once."""
    if twin is None:
        return

    def chars(s: frozenset[str]) -> str:
        return "".join(sorted(s))

    _speedups.setup(
        Result,
        Edit,
        Finding,
        chars(charsets.PATH),
        chars(charsets.QUERY),
        chars(charsets.FRAGMENT),
        chars(charsets.UNRESERVED),
        chars(charsets.UNRESERVED_2396),
        default_ports,
        FOLD_AFTER,
        tuple(rule.name for rule in RULES),
        chars(charsets.USERINFO),
        chars(charsets.REG_NAME),
        InvalidTarget,
    )


def flags(rules: frozenset[str], strict: bool, unreserved_2396: bool) -> int:
    """The twin's switches for a policy; -1 when the twin cannot serve it (no twin).  Under a
    strict policy the twin raises the `InvalidTarget` the reference raises."""
    if twin is None or not rules <= _flags.keys():
        return -1
    bits = (_unreserved_2396 if unreserved_2396 else 0) | (_strict if strict else 0)
    for rule in rules:
        bits |= _flags[rule]
    return bits
