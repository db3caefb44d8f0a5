"""Character classes of RFC 3986 Appendix A (and RFC 2396's marks), one per component, and the
grammar fragments built from them.

Everything here is data: module-level frozensets built by set algebra, named after the ABNF rules
they come from, and the regular-expression fragments derived from them once at import (each
quoting the ABNF it stands for), which `split.py`, `rules.py` and `fastpath.py` compose.
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


# --- grammar fragments: regular-expression text, named after the ABNF rules they match

# RFC 3986 §2.1  pct-encoded = "%" HEXDIG HEXDIG
PCT_ENCODED = "%[0-9A-Fa-f]{2}"
# RFC 3986 §3.1  scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
# Possessive: no scheme character is the ":" that ends it, so giving back never helps.
SCHEME = rf"[A-Za-z][{regex_class(SCHEME_CHARS)}]*+"
# RFC 1034 §3.5  a name of letters, digits and hyphens ("LDH"), in labels separated by "."; the
# fast path's lower-case one ends in a letter (a name ending in a digit may be a numeric host).
LDH_NAME = r"[A-Za-z0-9.\-]*"
# Possessive: a label cannot hold the "." that ends it, so giving back never helps, and the
# regex engine no longer walks back over the last label (an eighth of a host's match).
LDH_LOWER_HOST = r"(?:[a-z0-9\-]++\.)*+[a-z][a-z0-9\-]*+"
# RFC 3986 §3.2.2  IPv4address = dec-octet "." dec-octet "." dec-octet "." dec-octet
#                  dec-octet   = DIGIT / %x31-39 DIGIT / "1" 2DIGIT / "2" %x30-34 DIGIT
#                              / "25" %x30-35
# Exactly the numeric hosts the WHATWG IPv4 parser leaves as they are (no leading zero, no hex,
# four parts, each at most 255).
DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4_ADDRESS = rf"{DEC_OCTET}(?:\.{DEC_OCTET}){{3}}"
# RFC 3986 §3.2.2  IP-literal = "[" ( IPv6address / IPv6addrz / IPvFuture ) "]"
#                  IPvFuture  = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
# RFC 6874 §2      IPv6addrz  = IPv6address "%25" ZoneID
#                  ZoneID     = 1*( unreserved / pct-encoded )
# RFC 6874 §4 asks parsers to accept a bare "%" before the zone ID, as `ping` prints it
# ("fe80::1%en0"): the ``percent`` group is then "%", which the driver repairs to "%25".  Only a
# "%" that starts no escape is bare: "%00" is an escape, as everywhere else (encode-stray-percent).
# Possessive runs: a megabyte of zone that fails at its end is not walked back character-wise.
# The IPv6 address itself is checked by `ipaddress`, not by this pattern.
IP_LITERAL = (
    r"\[(?:(?P<future>[vV][0-9A-Fa-f]+\.["
    + regex_class(UNRESERVED | SUB_DELIMS | {":"})
    + r"]+)|(?P<address>[0-9A-Fa-f:.]++)(?:(?P<percent>%25|%(?![0-9A-Fa-f]{2}))(?P<zone>(?:["
    + regex_class(UNRESERVED)
    + r"]++|%[0-9A-Fa-f]{2})++))?)\]"
)
