"""The accelerated path's old home: `canonical.py` now chooses between compiled twin, fast path
and reference.  Its names stay importable from here (tools/asan_speedups.py imports
``twin_flags`` so)."""

from __future__ import annotations

from .canonical import Derived, derived, twin_flags

__all__ = ["Derived", "derived", "twin_flags"]
