"""The compiled twin of the driver (core/_speedups.c), behind one import, as yarl does it.

This module only loads it: its functions, or None each where it is absent (a build without a C
compiler installs without it; ``URLSAN_NO_EXTENSIONS=1`` leaves it unloaded).  What runs when,
and everything the twin is handed (the tables it walks, the Python functions its entry calls),
is `canonical.py`'s, in one place.

``twin`` is also the switch: ``compiled.twin = None`` sets the twin aside at run time, for the
compiled entry too (tests, bench/core.py's pure-Python column, the proxy's warning test), and
putting the function back turns it on again.

The twin handles the targets most traffic is made of: origin-form paths, and http(s)/ws(s) URLs
with an ASCII host.  It returns the Result the reference driver returns (or raises its
`InvalidTarget`, under a strict policy), or None for anything else, and then the driver runs.
tests/core/test_speedups.py holds the two to the same output.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from .pipeline import twin_disagreements
from .result import Edit, Finding, Result
from .taxonomy import KINDS

Twin = Callable[[str, int, str], Result | None]

twin: Twin | None = None  # _speedups.canonicalize(target, flags, form), the switch (above)
declined: Callable[[], str | None] | None = None  # why the twin's last call returned None
entry: Callable[..., Callable[..., Result]] | None = None  # makes the public canonicalize, in C
setup: Callable[..., None] | None = None  # hands the twin the tables it walks
urls: Callable[..., list[str]] | None = None  # many.py's loops, in C
columns: Callable[..., tuple[list[Any], list[Any], list[Any]]] | None = None
ascii_url: object | None = None  # the capsule of the twin's way in for C callers (core/_twin.h)
path: str | None = None  # the extension's file
_flags: dict[str, int] = {}  # a rule's switch of the twin, for each rule it has one for
_unreserved_2396 = 0  # the switch of RFC 2396's wider unreserved set
_strict = 0  # the switch of a strict policy: raise where the policy would have to repair
_slots: Callable[[type], None] | None = None  # _speedups.fields_as_slots

if not os.environ.get("URLSAN_NO_EXTENSIONS"):
    try:
        from . import _speedups
    except ImportError:  # no compiler at install time: the pure-Python driver does it all
        pass
    else:
        twin = _speedups.canonicalize
        declined = _speedups.declined
        entry = _speedups.entry
        setup = _speedups.setup
        urls = _speedups.urls
        columns = _speedups.columns
        ascii_url = _speedups.ASCII_URL
        path = _speedups.__file__
        _flags = _speedups.FLAGS
        # The twin's switches are the rule declarations' (`Rule.twin`): a rule added or changed
        # on one side only must not run under the other side's idea of it.
        _wrong = twin_disagreements(_flags)
        # Its findings are the declared kinds (`taxonomy.KINDS`) but the proxy's own.
        _wrong += [
            f"finding {k}: not a declared kind" for k in _speedups.FINDINGS if k not in KINDS
        ]
        if _wrong:
            raise RuntimeError(
                "urlsan.core._speedups disagrees with the declarations (pipeline.RULES, "
                f"taxonomy.KINDS): {'; '.join(_wrong)}"
            )
        _unreserved_2396 = _speedups.UNRESERVED_2396
        _strict = _speedups.STRICT
        _slots = _speedups.fields_as_slots

T = TypeVar("T", bound=type)


def fields_as_slots(cls: T) -> T:
    """A NamedTuple class whose fields CPython reads as it reads ``__slots__``, at a tenth of the
    cost of collections' field getters (`_speedups.fields_as_slots`): for the values read on
    every request.  The class unchanged without the twin.  A class decorator."""
    if _slots is not None:
        _slots(cls)
    return cls


for _read_often in (Result, Edit, Finding):
    fields_as_slots(_read_often)
