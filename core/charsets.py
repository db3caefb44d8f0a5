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
# RFC 3986 §3.2.2  IPv6address =                            6( h16 ":" ) ls32
#                              /                       "::" 5( h16 ":" ) ls32
#                              / [               h16 ] "::" 4( h16 ":" ) ls32
#                              / [ *1( h16 ":" ) h16 ] "::" 3( h16 ":" ) ls32
#                              / [ *2( h16 ":" ) h16 ] "::" 2( h16 ":" ) ls32
#                              / [ *3( h16 ":" ) h16 ] "::"    h16 ":"   ls32
#                              / [ *4( h16 ":" ) h16 ] "::"              ls32
#                              / [ *5( h16 ":" ) h16 ] "::"              h16
#                              / [ *6( h16 ":" ) h16 ] "::"
#                  h16         = 1*4HEXDIG
#                  ls32        = ( h16 ":" h16 ) / IPv4address
# Exactly the addresses Python's `ipaddress.IPv6Address` takes (tests/core/test_rules.py holds
# the two together), at the cost of one match instead of a parse in Python.  Each form is bounded:
# a long run that is no address fails within its first 45 characters.
_H16 = "[0-9A-Fa-f]{1,4}"
_LS32 = f"(?:{_H16}:{_H16}|{IPV4_ADDRESS})"
_IPV6_FORMS = (  # the nine above, in order
    f"(?:{_H16}:){{6}}{_LS32}",
    f"::(?:{_H16}:){{5}}{_LS32}",
    f"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    f"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    f"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    f"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    f"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    f"(?:(?:{_H16}:){{0,6}}{_H16})?::",
)
# Tried as a regex tries alternatives, left to right, which only decides how soon it matches:
# the form without "::" first, then those with "::" from the fewest groups after it (most
# addresses end "::1" or "::98f7", and a form that wants more groups after "::" fails late).
IPV6_ADDRESS = f"(?:{'|'.join((_IPV6_FORMS[0], *reversed(_IPV6_FORMS[1:])))})"
# RFC 3986 §3.2.2  IP-literal = "[" ( IPv6address / IPv6addrz / IPvFuture ) "]"
#                  IPvFuture  = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
# RFC 6874 §2      IPv6addrz  = IPv6address "%25" ZoneID
#                  ZoneID     = 1*( unreserved / pct-encoded )
# RFC 6874 §4 asks parsers to accept a bare "%" before the zone ID, as `ping` prints it
# ("fe80::1%en0"): the ``percent`` group is then "%", which the driver repairs to "%25".  Only a
# "%" that starts no escape is bare: "%00" is an escape, as everywhere else (encode-stray-percent).
# Possessive runs: a megabyte of zone that fails at its end is not walked back character-wise.
# The IPv6 address itself is checked by IPV6_ADDRESS, a match of its own: within this pattern it
# would cost more (its forms would be tried again for each way the zone and "]" could follow).
IP_LITERAL = (
    r"\[(?:(?P<future>[vV][0-9A-Fa-f]+\.["
    + regex_class(UNRESERVED | SUB_DELIMS | {":"})
    + r"]+)|(?P<address>[0-9A-Fa-f:.]++)(?:(?P<percent>%25|%(?![0-9A-Fa-f]{2}))(?P<zone>(?:["
    + regex_class(UNRESERVED)
    + r"]++|%[0-9A-Fa-f]{2})++))?)\]"
)
