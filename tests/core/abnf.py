"""RFC 3986 Appendix A as regular expressions, for checking what `canonicalize` returns.

Built the way h11's ``_abnf.py`` is: each ABNF rule is quoted in a comment and becomes a small
regex fragment with the rule's name, and the fragments compose into the larger rules.  This is the
test suite's own reading of the grammar, written independently of ``urlsan.core.charsets`` so that
a wrong table in the core cannot make its own output look valid.
"""

from __future__ import annotations

import re

# RFC 5234 core rules.
ALPHA = r"A-Za-z"
DIGIT = r"0-9"
HEXDIG = r"0-9A-Fa-f"

# pct-encoded   = "%" HEXDIG HEXDIG
pct_encoded = rf"%[{HEXDIG}][{HEXDIG}]"
# unreserved    = ALPHA / DIGIT / "-" / "." / "_" / "~"
unreserved = rf"{ALPHA}{DIGIT}\-._~"
# sub-delims    = "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
sub_delims = r"!$&'()*+,;="

# scheme        = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
scheme = rf"[{ALPHA}][{ALPHA}{DIGIT}+\-.]*"

# userinfo      = *( unreserved / pct-encoded / sub-delims / ":" )
userinfo = rf"(?:[{unreserved}{sub_delims}:]|{pct_encoded})*"

# dec-octet     = DIGIT / %x31-39 DIGIT / "1" 2DIGIT / "2" %x30-34 DIGIT / "25" %x30-35
dec_octet = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
# IPv4address   = dec-octet "." dec-octet "." dec-octet "." dec-octet
IPv4address = rf"{dec_octet}\.{dec_octet}\.{dec_octet}\.{dec_octet}"
# h16           = 1*4HEXDIG
h16 = rf"[{HEXDIG}]{{1,4}}"
# ls32          = ( h16 ":" h16 ) / IPv4address
ls32 = rf"(?:{h16}:{h16}|{IPv4address})"
# IPv6address   =                            6( h16 ":" ) ls32
#               /                       "::" 5( h16 ":" ) ls32
#               / [               h16 ] "::" 4( h16 ":" ) ls32
#               / [ *1( h16 ":" ) h16 ] "::" 3( h16 ":" ) ls32
#               / [ *2( h16 ":" ) h16 ] "::" 2( h16 ":" ) ls32
#               / [ *3( h16 ":" ) h16 ] "::"    h16 ":"   ls32
#               / [ *4( h16 ":" ) h16 ] "::"              ls32
#               / [ *5( h16 ":" ) h16 ] "::"              h16
#               / [ *6( h16 ":" ) h16 ] "::"
IPv6address = (
    "(?:"
    + "|".join(
        [
            rf"(?:{h16}:){{6}}{ls32}",
            rf"::(?:{h16}:){{5}}{ls32}",
            rf"(?:{h16})?::(?:{h16}:){{4}}{ls32}",
            rf"(?:(?:{h16}:){{0,1}}{h16})?::(?:{h16}:){{3}}{ls32}",
            rf"(?:(?:{h16}:){{0,2}}{h16})?::(?:{h16}:){{2}}{ls32}",
            rf"(?:(?:{h16}:){{0,3}}{h16})?::{h16}:{ls32}",
            rf"(?:(?:{h16}:){{0,4}}{h16})?::{ls32}",
            rf"(?:(?:{h16}:){{0,5}}{h16})?::{h16}",
            rf"(?:(?:{h16}:){{0,6}}{h16})?::",
        ]
    )
    + ")"
)
# RFC 6874 §2:  ZoneID = 1*( unreserved / pct-encoded );  IPv6addrz = IPv6address "%25" ZoneID
ZoneID = rf"(?:[{unreserved}]|{pct_encoded})+"
IPv6addrz = rf"{IPv6address}%25{ZoneID}"
# IPvFuture     = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
IPvFuture = rf"[vV][{HEXDIG}]+\.[{unreserved}{sub_delims}:]+"
# IP-literal    = "[" ( IPv6address / IPv6addrz / IPvFuture  ) "]"     (RFC 6874 adds IPv6addrz)
IP_literal = rf"\[(?:{IPv6addrz}|{IPv6address}|{IPvFuture})\]"
# reg-name      = *( unreserved / pct-encoded / sub-delims )
reg_name = rf"(?:[{unreserved}{sub_delims}]|{pct_encoded})*"
# host          = IP-literal / IPv4address / reg-name
host = rf"(?:{IP_literal}|{IPv4address}|{reg_name})"
# port          = *DIGIT
port = rf"[{DIGIT}]*"
# authority     = [ userinfo "@" ] host [ ":" port ]
authority = rf"(?:{userinfo}@)?{host}(?::{port})?"

# pchar         = unreserved / pct-encoded / sub-delims / ":" / "@"
pchar = rf"(?:[{unreserved}{sub_delims}:@]|{pct_encoded})"
# segment       = *pchar
segment = rf"{pchar}*"
# segment-nz    = 1*pchar
segment_nz = rf"{pchar}+"
# segment-nz-nc = 1*( unreserved / pct-encoded / sub-delims / "@" )
segment_nz_nc = rf"(?:[{unreserved}{sub_delims}@]|{pct_encoded})+"
# path-abempty  = *( "/" segment )
path_abempty = rf"(?:/{segment})*"
# path-absolute = "/" [ segment-nz *( "/" segment ) ]
path_absolute = rf"/(?:{segment_nz}(?:/{segment})*)?"
# path-noscheme = segment-nz-nc *( "/" segment )
path_noscheme = rf"{segment_nz_nc}(?:/{segment})*"
# path-rootless = segment-nz *( "/" segment )
path_rootless = rf"{segment_nz}(?:/{segment})*"
# path-empty    = 0<pchar>
path_empty = r""

# query         = *( pchar / "/" / "?" )
query = rf"(?:{pchar}|[/?])*"
# fragment      = *( pchar / "/" / "?" )
fragment = rf"(?:{pchar}|[/?])*"

# hier-part     = "//" authority path-abempty / path-absolute / path-rootless / path-empty
hier_part = rf"(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|{path_empty})"
# URI           = scheme ":" hier-part [ "?" query ] [ "#" fragment ]
URI = rf"{scheme}:{hier_part}(?:\?{query})?(?:\#{fragment})?"
# relative-part = "//" authority path-abempty / path-absolute / path-noscheme / path-empty
relative_part = rf"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|{path_empty})"
# relative-ref  = relative-part [ "?" query ] [ "#" fragment ]
relative_ref = rf"{relative_part}(?:\?{query})?(?:\#{fragment})?"
# URI-reference = URI / relative-ref
URI_reference = rf"(?:{URI}|{relative_ref})"

# RFC 9112 §3.2.3:  authority-form = uri-host ":" port   (RFC 9110 §4.1: uri-host = host)
authority_form = rf"{host}:{port}"
# RFC 9112 §3.2.1:  origin-form = absolute-path [ "?" query ]
#                   absolute-path = 1*( "/" segment )                       (RFC 9110 §4.1)
origin_form = rf"(?:/{segment})+(?:\?{query})?"

URI_REFERENCE = re.compile(URI_reference)
AUTHORITY_FORM = re.compile(authority_form)
ORIGIN_FORM = re.compile(origin_form)
PCT_ENCODED = re.compile(pct_encoded)


def is_uri_reference(text: str) -> bool:
    return URI_REFERENCE.fullmatch(text) is not None
