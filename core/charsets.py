"""Character classes of RFC 3986 Appendix A (and RFC 2396's marks), one per component.

Everything here is data: module-level frozensets built by set algebra, named after the ABNF rules
they come from, and the regular-expression character classes derived from them once at import.
"""

from __future__ import annotations

import string

# RFC 3986 §2.3:  unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
ALPHA = frozenset(string.ascii_letters)
DIGIT = frozenset(string.digits)
HEXDIG = frozenset(string.hexdigits)
UNRESERVED = ALPHA | DIGIT | frozenset("-._~")

# RFC 3986 §2.2:  gen-delims = ":" / "/" / "?" / "#" / "[" / "]" / "@"
#                 sub-delims = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
GEN_DELIMS = frozenset(":/?#[]@")
SUB_DELIMS = frozenset("!$&'()*+,;=")
RESERVED = GEN_DELIMS | SUB_DELIMS

# RFC 2396 §2.3:  mark = "-" | "_" | "." | "!" | "~" | "*" | "'" | "(" | ")"
# RFC 3986 moved "!*'()" into sub-delims; the `rfc2396` profile decodes their escapes again.
MARK_2396 = frozenset("-_.!~*'()")
UNRESERVED_2396 = ALPHA | DIGIT | MARK_2396

# RFC 3986 §3.1:  scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
SCHEME_CHARS = ALPHA | DIGIT | frozenset("+-.")

# Characters allowed raw in each component (pct-encoded handled separately).
# §3.2.1  userinfo = *( unreserved / pct-encoded / sub-delims / ":" )
USERINFO = UNRESERVED | SUB_DELIMS | frozenset(":")
# §3.2.2  reg-name = *( unreserved / pct-encoded / sub-delims )
REG_NAME = UNRESERVED | SUB_DELIMS
# §3.3    pchar = unreserved / pct-encoded / sub-delims / ":" / "@";  path adds "/"
PCHAR = UNRESERVED | SUB_DELIMS | frozenset(":@")
PATH = PCHAR | frozenset("/")
# §3.4, §3.5  query = fragment = *( pchar / "/" / "?" )
QUERY = PCHAR | frozenset("/?")
FRAGMENT = QUERY

# Everything else must be percent-encoded: controls, space, RFC 2396 §2.4.3's delims '<>#%"' and
# "unwise" '{}|\^[]`' are simply absent from every RFC 3986 production.  The scanners in
# rules.py derive what to escape as the complement of these sets, so no separate table is kept.
ALLOWED = {
    "userinfo": USERINFO,
    "host": REG_NAME,
    "path": PATH,
    "query": QUERY,
    "fragment": FRAGMENT,
}


def regex_class(chars: frozenset[str]) -> str:
    """A regex character class body matching exactly ``chars`` (ASCII only)."""
    return "".join("\\" + c if c in "\\]^-[" else c for c in sorted(chars))
