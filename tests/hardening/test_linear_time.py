"""No input may take more than linear time (issue #5), as a growth ratio of operation counts.

Counts the function calls (Python and C) the pure-Python driver makes, with sys.setprofile, for each
adversarial family of tools/fuzz.py at two sizes 8x apart: linear work grows 8x, quadratic 64x;
the bound is 16x.  Deterministic: no clock is read.  `python tools/fuzz.py growth` prints
timings for the same families (regex backtracking, which these counts cannot see, shows there;
test_known_bugs.py pins the one found).  The compiled twin is a single C call that these counts
cannot see into, and it declines some large inputs that it takes when small, so the counts are
taken on `canonicalize_python`; bench/core.py's growth table times the twin.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from tests.hardening import support
from tests.hardening.fuzzing import POLICIES
from tools.fuzz import FAMILIES
from urlsan.core import InvalidTarget
from urlsan.core.canonical import canonicalize_python

SMALL, LARGE = 400, 3200
BOUND = 16.0


def operations(target: str, policy: str, form: str) -> int:
    count = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        canonicalize_python(target, POLICIES[policy], form=form)
    except InvalidTarget:
        pass
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("policy", ["rfc3986", "opt-in", "crawler"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_operations_grow_linearly(family: str, policy: str) -> None:
    make: Callable[[int], str] = FAMILIES[family]
    forms = ("auto",) if family.startswith(("host", "ipv6", "scheme")) else ("auto", "origin")
    for form in forms:
        small = operations(make(SMALL), policy, form)
        large = operations(make(LARGE), policy, form)
        support.FIGURES["linear time: inputs measured"] += 2
        ratio = large / max(small, 1)
        assert ratio <= BOUND, (
            f"{family} / {policy} / {form}: {small} calls at {SMALL} chars, {large} at {LARGE} "
            f"(x{ratio:.1f}; linear is x{LARGE // SMALL})"
        )
