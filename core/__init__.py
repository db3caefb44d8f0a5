"""urlsan.core — the RFC 3986 canonicalizer: split first, then rewrite, and record every rewrite.

>>> from urlsan.core import canonicalize
>>> canonicalize("HTTP://Example.COM:80/%7euser/./a/../b%2fc?q=%41 b").url
'http://example.com/~user/b%2Fc?q=A%20b'
"""

from .canonical import canonicalize, canonicalize_authority, engine, twin_loaded
from .policy import RULES, Policy, Rule
from .result import Edit, Finding, InvalidTarget, Result
from .surt import surt

__all__ = [
    "RULES",
    "Edit",
    "Finding",
    "InvalidTarget",
    "Policy",
    "Result",
    "Rule",
    "canonicalize",
    "canonicalize_authority",
    "engine",
    "surt",
    "twin_loaded",
]
