r"""How each server behind a proxy reads a request-target, as data: what `backends.py` walks.

A model is a combination of named `TRAITS`, in order: each trait a step the server takes (a
`Step` naming an operation of `backends.py` and its argument), with the source the step rests
on in that server.  `custom` makes a model of traits a user names where no server's fits.
``measured`` models were held against the real server (tests/backends, on the version
named); the others are read from the server's documentation.  A step's argument is a
string, or a frozenset of bytes for the byte sets.

The operations, in the order a server may take them:

``refuse-raw``        refuse when the target holds one of these bytes as sent
``split-line``        the request line is ``METHOD SP target SP HTTP/1.1``: these bytes separate
                      its words, so a run of them at the end of the target (before the version)
                      is a separator the server drops, and one inside it is 400 (too many words)
``refuse-high-haproxy`` HAProxy's scan of the target (`backends._refuse_high_haproxy`)
``check-decoded``     refuse what this decoder refuses in the whole target, query too; the
                      target itself goes on unchanged
``refuse-raw-utf8``   refuse when the target's bytes above 0x7F are no valid UTF-8
``cut``               the path ends at the first of these bytes (``?``, and ``#`` for some)
``cut-escaped``       as ``cut``, but not within an escape (``%XX``, ``%uXXXX``)
``leading-slashes``   a run of ``/`` at the start becomes one
``refuse-dot-param``  refuse a segment that is ``.`` or ``..`` (decoded) with a path parameter
``strip-params``      remove path parameters: ``each`` (``;…`` up to the next ``/`` in every
                      segment), ``jetty`` (see `backends._strip_params_jetty`)
``jetty-path``        Jetty's HttpURI: the last path parameter of the last segment cut; the
                      rest decoded (decoder ``jetty``, with every ``;…`` up to a ``/`` removed)
                      only when the path holds a ``%`` or a parameter before a ``/``
``backslash``         every ``\`` becomes ``/``
``uppercase-escapes`` the hex digits of every escape in upper case
``refuse-decoded``    refuse when the path, as decoded so far, holds one of these bytes
``decode``            percent-decode; the argument names a `Decoder` of `DECODERS`
``merge-slashes``     a run of ``/`` becomes one
``dots``              remove dot segments; the argument names a `Dots` of `DOTS`
``lstrip-slashes``    a run of ``/`` at the start of the decoded path becomes one
``lowercase``         ASCII letters in lower case (a router that matches case-insensitively)
``charset``           bytes to text: ``bytes`` (UTF-8, other bytes kept as surrogate escapes, as
                      ``os.fsdecode``), ``replace`` (U+FFFD), ``refuse`` (400), ``latin-1``
                      (the whole path as Latin-1 when it is no valid UTF-8), ``text`` (UTF-8,
                      lone surrogates of ``%uD800`` kept)
"""

from __future__ import annotations

from typing import NamedTuple


class Step(NamedTuple):
    op: str
    arg: str | frozenset[int] = ""
    source: str = ""


class Decoder(NamedTuple):
    """One server's percent-decoding."""

    refuse: frozenset[int] = frozenset()  # decoded bytes answered with 4xx
    invalid: str = "refuse"  # "%" without two hex digits: "refuse" or "keep"
    u_escapes: bool = False  # %uXXXX (UTF-16 code unit) decoded
    loose_hex: bool = False  # Jetty's hex digits: any byte whose value maps into 0-15
    only_unreserved: bool = False  # decode ALPHA / DIGIT / "-" / "." / "_" / "~" only
    utf8: bool = False  # invalid UTF-8 in an escape refused (decodeURIComponent)
    raw_latin1: bool = False  # raw bytes above 0x7F are Latin-1 characters (a WSGI request line)
    latin1_fallback: bool = False  # escapes that make no UTF-8 are Latin-1 characters instead
    params: bool = False  # ";" up to the next "/" dropped (Jetty's URIUtil.decodePath)
    keep: frozenset[int] = frozenset()  # decoded bytes left as their escape
    only_dots: bool = False  # decode "%2e" alone, and only in a segment it makes a dot segment


class Dots(NamedTuple):
    """One server's removal of dot segments."""

    above_root: str  # "refuse" (4xx), "clamp" (stays at "/") or "keep" (the ".." stays)
    trailing: str = "slash"  # "/a/b/.." → "/a/" ("slash") or "/a" ("none")


class Model(NamedTuple):
    name: str
    server: str
    version: str  # the version measured, or documented
    measured: bool
    steps: tuple[Step, ...]
    settings: str  # the settings that change the reading
    traits: tuple[str, ...] = ()  # the `TRAITS` its steps are made of, in order


def _bytes(*ranges: tuple[int, int], extra: bytes = b"") -> frozenset[int]:
    out = set(extra)
    for lo, hi in ranges:
        out.update(range(lo, hi + 1))
    return frozenset(out)


CONTROLS = _bytes((0x00, 0x1F), extra=b"\x7f")
NON_ASCII = _bytes((0x80, 0xFF))
SLASH = frozenset(b"/")
BACKSLASH = frozenset(b"\\")
NUL = frozenset(b"\x00")
SP = frozenset(b" ")
NEVER_UTF8 = _bytes((0xF5, 0xFF), extra=b"\xc0\xc1")
# Python's str.split() whitespace in a Latin-1 request line: http.server sees more than three words
PY_WHITESPACE = SP | frozenset(b"\t\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0")
# Tomcat's request-target: RFC 7230 characters only (relaxedPathChars and relaxedQueryChars unset)
TOMCAT_RAW = CONTROLS | NON_ASCII | frozenset(b'"#<>[\\]^`{|}')

DECODERS: dict[str, Decoder] = {
    "nginx": Decoder(refuse=NUL),
    "go": Decoder(),
    "node": Decoder(utf8=True),
    "werkzeug": Decoder(invalid="keep", raw_latin1=True),
    "apache-unreserved": Decoder(invalid="refuse", only_unreserved=True),
    "apache": Decoder(refuse=SLASH | NUL),
    "apache-encoded-slashes-on": Decoder(refuse=NUL),
    "unreserved": Decoder(only_unreserved=True, invalid="keep"),
    "dots-only": Decoder(only_dots=True, invalid="keep"),
    "iis": Decoder(refuse=NUL, u_escapes=True, latin1_fallback=True),
    "apache-encoded-slashes-nodecode": Decoder(refuse=NUL, keep=SLASH),
    "tomcat": Decoder(refuse=SLASH | BACKSLASH | NUL),
    "tomcat-solidus-decode": Decoder(refuse=BACKSLASH | NUL),
    "tomcat-solidus-passthrough": Decoder(refuse=BACKSLASH | NUL, keep=SLASH | frozenset(b"%")),
    "lighttpd": Decoder(invalid="keep", refuse=CONTROLS),
    # bytes no UTF-8 holds anywhere (C0, C1, F5-FF); a stray continuation byte passes
    "lighttpd-check": Decoder(invalid="keep", refuse=CONTROLS | NEVER_UTF8),
    "jetty": Decoder(refuse=NUL, u_escapes=True, loose_hex=True, latin1_fallback=True, params=True),
}

DOTS: dict[str, Dots] = {
    "refuse": Dots("refuse"),
    "refuse-no-slash": Dots("refuse", "none"),
    "clamp": Dots("clamp"),
    "clamp-no-slash": Dots("clamp", "none"),
    "keep": Dots("keep"),  # ".." above the root stays (HAProxy without "full")
}

# --- traits: each a step a server takes or does not take, named; a model is some of them, in order


class Trait(NamedTuple):
    """One step a server may take, by name: the `Step` it is (without a source) and what it
    means, in words (``urlsan_backends=custom:…`` and docs/backends.md list them)."""

    step: Step
    means: str


C0 = _bytes((0x00, 0x1F))
DEL = frozenset(b"\x7f")
# What RFC 7230 does not allow in a request-target and Tomcat refuses (relaxedPathChars unset)
RFC7230_DELIMS = frozenset(b'"#<>[\\]^`{|}')

TRAITS: dict[str, Trait] = {
    # the request line: which white space separates its words
    "line-sp": Trait(
        Step("split-line", SP), "spaces after the target separate it; one inside is 400"
    ),
    "line-sp-tab": Trait(
        Step("split-line", SP | frozenset(b"\t")), "spaces and tabs separate the target"
    ),
    "line-py": Trait(
        Step("split-line", PY_WHITESPACE), "white space of Python's str.split() separates it"
    ),
    # raw bytes refused (400)
    "refuse-c0": Trait(Step("refuse-raw", C0), "a raw control byte (0x00-0x1F) is 400"),
    "refuse-del": Trait(Step("refuse-raw", DEL), "a raw DEL (0x7F) is 400"),
    "refuse-sp": Trait(Step("refuse-raw", SP), "a space in the target is 400"),
    "refuse-non-ascii": Trait(Step("refuse-raw", NON_ASCII), "a raw byte above 0x7F is 400"),
    "refuse-hash": Trait(Step("refuse-raw", frozenset(b"#")), "a raw '#' is 400"),
    "refuse-rfc7230": Trait(
        Step("refuse-raw", RFC7230_DELIMS),
        "a raw '\"', '#', '<', '>', '[', '\\', ']', '^', '{', '}', backquote or bar is 400",
    ),
    "refuse-high-haproxy": Trait(
        Step("refuse-high-haproxy"),
        "a raw byte above 0x7E is 400, unless in the words HAProxy's fast scan skips",
    ),
    "refuse-never-utf8": Trait(
        Step("refuse-raw", NEVER_UTF8), "a raw byte no UTF-8 holds (C0, C1, F5-FF) is 400"
    ),
    "refuse-invalid-utf8": Trait(
        Step("refuse-raw-utf8"), "raw bytes above 0x7F that are no UTF-8 are 400"
    ),
    # where the path ends
    "cut-query": Trait(Step("cut", "?"), "the path ends at '?'"),
    "cut-fragment": Trait(Step("cut", "#"), "the path ends at '#' (without it, '#' is kept)"),
    "cut-query-fragment-unescaped": Trait(
        Step("cut-escaped", "?#"), "the path ends at '?' or '#' not within an escape"
    ),
    # path parameters
    "refuse-dot-params": Trait(Step("refuse-dot-param"), "a '.' or '..' segment with ';' is 400"),
    "strip-params": Trait(Step("strip-params", "each"), "';…' removed from every segment"),
    "jetty-params": Trait(
        Step("jetty-path"),
        "Jetty's: the last ';…' cut, the rest decoded with every ';…' removed when encoded",
    ),
    # slashes before decoding
    "merge-leading-slashes": Trait(Step("leading-slashes"), "a run of '/' at the start is one"),
    "backslash": Trait(Step("backslash"), "'\\' is '/'"),
    "uppercase-escapes": Trait(Step("uppercase-escapes"), "escapes' hex digits upper-cased"),
    # percent-decoding (a trait twice: decoded twice)
    "decode": Trait(Step("decode", "go"), "every %XX decoded; a bad escape is 400"),
    "decode-refuse-nul": Trait(Step("decode", "nginx"), "decode; %00 is 400"),
    "decode-refuse-nul-slash": Trait(Step("decode", "apache"), "decode; %00 and %2F are 400"),
    "decode-refuse-nul-slash-backslash": Trait(
        Step("decode", "tomcat"), "decode; %00, %2F and %5C are 400"
    ),
    "decode-keep-slash": Trait(
        Step("decode", "apache-encoded-slashes-nodecode"), "decode but %2F; %00 is 400"
    ),
    "refuse-target-ctl-utf8": Trait(
        Step("check-decoded", "lighttpd-check"),
        "the target decoded, query too: a control byte or C0, C1, F5-FF is 400",
    ),
    "decode-lenient-refuse-ctl": Trait(
        Step("decode", "lighttpd"), "decode; a bad escape stays; a decoded control byte is 400"
    ),
    "decode-utf8": Trait(Step("decode", "node"), "decode; a bad escape or no UTF-8 is 400"),
    "decode-lenient": Trait(
        Step("decode", "werkzeug"), "decode; a bad escape stays; raw bytes above 0x7F are Latin-1"
    ),
    "decode-u": Trait(
        Step("decode", "iis"), "decode %XX and %uXXXX; no UTF-8 is Latin-1; %00 is 400"
    ),
    "decode-unreserved": Trait(
        Step("decode", "apache-unreserved"), "decode unreserved escapes; a bad escape is 400"
    ),
    "decode-unreserved-lenient": Trait(
        Step("decode", "unreserved"), "decode unreserved escapes; a bad escape stays"
    ),
    "decode-dots": Trait(Step("decode", "dots-only"), "decode a %2e that makes a dot segment"),
    "refuse-double-escape": Trait(
        Step("refuse-decoded", frozenset(b"%+")), "a '%' or '+' left after decoding is 400"
    ),
    # slashes and dot segments after decoding
    "merge-slashes": Trait(Step("merge-slashes"), "a run of '/' is one"),
    "dots-refuse": Trait(Step("dots", "refuse"), "dot segments resolved; above the root is 400"),
    "dots-refuse-no-slash": Trait(
        Step("dots", "refuse-no-slash"), "as dots-refuse, '/a/b/..' is '/a'"
    ),
    "dots-clamp": Trait(Step("dots", "clamp"), "dot segments resolved; above the root is '/'"),
    "dots-clamp-no-slash": Trait(
        Step("dots", "clamp-no-slash"), "as dots-clamp, '/a/b/..' is '/a'"
    ),
    "dots-keep": Trait(Step("dots", "keep"), "dot segments resolved; '..' above the root stays"),
    "merge-leading-slashes-decoded": Trait(
        Step("lstrip-slashes"), "a run of '/' at the start of the decoded path is one"
    ),
    "lowercase": Trait(Step("lowercase"), "routes case-insensitively (ASCII)"),
    # bytes to text (the last step; "charset-bytes" when none is named)
    "charset-bytes": Trait(Step("charset", "bytes"), "bytes that are no UTF-8 kept as bytes"),
    "charset-replace": Trait(Step("charset", "replace"), "bytes that are no UTF-8 are U+FFFD"),
    "charset-refuse": Trait(Step("charset", "refuse"), "bytes that are no UTF-8 are 400"),
    "charset-latin1": Trait(Step("charset", "latin-1"), "a path that is no UTF-8 is Latin-1"),
    "charset-utf16": Trait(Step("charset", "text"), "UTF-8, %uD800 halves kept as UTF-16"),
}

# Adjacent steps of these operations are one step: their arguments joined.
_FUSED = {"refuse-raw", "cut"}


def steps_of(traits: tuple[tuple[str, str], ...]) -> tuple[Step, ...]:
    """The steps of ``traits`` (name, source) in order: adjacent refusals of raw bytes one
    step, adjacent cuts one step, so a model walks each once."""
    out: list[Step] = []
    for name, source in traits:
        step = TRAITS[name].step._replace(source=source)
        last = out[-1] if out else None
        if last is not None and last.op == step.op and step.op in _FUSED:
            out[-1] = _fuse(last, step)
        else:
            out.append(step)
    return tuple(out)


def _fuse(first: Step, then: Step) -> Step:
    if isinstance(first.arg, frozenset) and isinstance(then.arg, frozenset):
        arg: str | frozenset[int] = first.arg | then.arg
    else:
        arg = str(first.arg) + str(then.arg)
    source = first.source if then.source == first.source else f"{first.source}; {then.source}"
    return Step(first.op, arg, source)


def _model(
    name: str, server: str, version: str, measured: bool, settings: str, *traits: tuple[str, str]
) -> Model:
    names = tuple(t for t, _ in traits)
    return Model(name, server, version, measured, steps_of(traits), settings, names)


CUSTOM = "custom:"  # urlsan_backends=custom:trait,trait,...: a model of traits


def custom(traits: tuple[str, ...]) -> Model:
    """A model of ``traits`` (names of `TRAITS`) in the order given, ending in "charset-bytes"
    unless another charset trait is named; `ValueError` names the first unknown one."""
    unknown = [t for t in traits if t not in TRAITS]
    if unknown:
        raise ValueError(f"unknown trait {unknown[0]!r}: one of {', '.join(TRAITS)}")
    if not traits:
        raise ValueError(f"{CUSTOM} names no trait: one or more of {', '.join(TRAITS)}")
    named = tuple(traits)
    if not any(TRAITS[t].step.op == "charset" for t in named):
        named += ("charset-bytes",)
    name = CUSTOM + ",".join(traits)
    return _model(name, "traits given", "", False, "custom", *((t, "given") for t in named))


_NGINX = "src/http/ngx_http_parse.c, ngx_http_parse_complex_uri"
_NGINX_LINE = "src/http/ngx_http_parse.c, ngx_http_parse_request_line: sw_spaces_before_H"
_APACHE = "server/util.c, ap_normalize_path and ap_unescape_url; server/request.c"
_APACHE_LINE = "server/protocol.c: 400; HttpProtocolOptions Strict: one SP between words"
_TOMCAT = "org.apache.catalina.connector.CoyoteAdapter: parsePathParameters, normalize"
_TOMCAT_LINE = "Http11InputBuffer.parseRequestLine: SP or HTAB end the target"
_JETTY = "org.eclipse.jetty.http.HttpURI, URIUtil.decodePath and canonicalPath"
_GO = "net/url.ParseRequestURI, (*URL).setPath"
# Caddy 2.6 matches paths on r.URL.Path cleaned (modules/caddyhttp/matchers.go, cleanPath:
# path.Clean, a trailing slash kept) so that "/a/../admin" cannot slip past a path matcher
_CADDY = "modules/caddyhttp/matchers.go: MatchPath and MatchPathRE match cleanPath(r.URL.Path)"
_LIGHTTPD = "src/request.c, src/burl.c: burl_normalize (server.http-parseopts defaults)"
_HAPROXY_LINE = "src/h1.c, h1_parse_msg_hdrs: spaces and tabs before the version are skipped"
# h1_parse_msg_rquri skips the target's first 4-byte words while its arithmetic test passes,
# which lets some bytes above 0x7E through there; past them every such byte is 400
_HAPROXY_SCAN = "src/h1.c, h1_parse_msg_rquri: the HA_UNALIGNED_LE speedup, then char by char"
_HAPROXY_RAW = "src/h1.c: a byte outside the URI table is 400 (accept-invalid-http-request off)"
# A second space makes the protocol " HTTP/1.1" or "b HTTP/1.1": 400
_GO_LINE = "net/http.parseRequestLine: the target ends at the first SP"

MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        _model(
            "nginx",
            "nginx",
            "1.22.1",
            True,
            "merge_slashes off keeps repeated slashes",
            ("line-sp", _NGINX_LINE),
            ("refuse-c0", _NGINX),
            ("refuse-del", _NGINX),
            ("cut-query", _NGINX),
            ("cut-fragment", _NGINX),
            ("decode-refuse-nul", _NGINX + ": %00 is 400"),
            ("merge-slashes", "merge_slashes on (the default)"),
            ("dots-refuse", _NGINX + ": above the root is 400"),
            ("charset-bytes", "$uri holds bytes"),
        ),
        _model(
            "go",
            "Go net/http, a handler reading r.URL.Path",
            "1.19.8",
            True,
            "none",
            ("refuse-c0", _GO + ": a control byte is 400"),
            ("refuse-del", _GO + ": a control byte is 400"),
            ("refuse-sp", _GO_LINE),
            ("cut-query", _GO + ": no fragment in a request-target, '#' stays"),
            ("decode", _GO + ": a bad escape is 400"),
            ("charset-bytes", "a Go string holds bytes"),
        ),
        _model(
            "go-mux",
            "Go net/http ServeMux",
            "1.19.8",
            True,
            "none: the mux redirects (301) to the clean path, and routes that",
            ("refuse-c0", _GO),
            ("refuse-del", _GO),
            ("refuse-sp", _GO_LINE),
            ("cut-query", _GO),
            ("decode", _GO),
            ("merge-slashes", "net/http cleanPath: path.Clean"),
            ("dots-clamp-no-slash", "path.Clean; cleanPath keeps a trailing '/'"),
            ("charset-bytes", "a Go string holds bytes"),
        ),
        _model(
            "node",
            "Node http, routed as Express 4 routes",
            "20.20.2",
            True,
            "none",
            ("line-sp", "llhttp: spaces before the version are skipped"),
            ("refuse-c0", "llhttp: bytes outside the URL table"),
            ("refuse-del", "llhttp: bytes outside the URL table"),
            ("refuse-non-ascii", "llhttp: bytes outside the URL table"),
            ("cut-query", "parseurl: the pathname"),
            ("cut-fragment", "parseurl: the pathname"),
            ("decode-utf8", "decodeURIComponent: URIError is 400"),
            ("charset-bytes", "JavaScript text"),
        ),
        _model(
            "werkzeug",
            "werkzeug's WSGI server, request.path",
            "3.1.9",
            True,
            "none",
            ("line-py", "http.server: str.split() of the request line"),
            ("merge-leading-slashes", "http.server: gh-87389"),
            ("cut-query", "urllib.parse.urlsplit"),
            ("cut-fragment", "urllib.parse.urlsplit"),
            ("decode-lenient", "urllib.parse.unquote"),
            ("merge-leading-slashes-decoded", "werkzeug Request.path"),
            ("charset-replace", "unquote(errors='replace')"),
        ),
        _model(
            "apache",
            "Apache httpd",
            "2.4.71",
            True,
            "AllowEncodedSlashes On decodes %2F, NoDecode keeps it; MergeSlashes Off",
            ("refuse-c0", _APACHE_LINE),
            ("refuse-del", _APACHE_LINE),
            ("refuse-sp", _APACHE_LINE),
            ("refuse-hash", _APACHE_LINE),
            ("cut-query", "apr_uri_parse"),
            ("merge-leading-slashes", "server/protocol.c, ap_parse_uri"),
            ("decode-unreserved", _APACHE + ": AP_NORMALIZE_DECODE_UNRESERVED"),
            ("merge-slashes", "MergeSlashes On (the default)"),
            ("dots-refuse", _APACHE + ": above the root is 400"),
            ("decode-refuse-nul-slash", _APACHE + ": AllowEncodedSlashes Off: %2F is 404"),
            ("charset-bytes", "r->uri holds bytes"),
        ),
        _model(
            "tomcat",
            "Apache Tomcat",
            "10.1.60",
            True,
            "Connector encodedSolidusHandling (decode, passthrough), allowBackslash, "
            "relaxedPathChars",
            ("line-sp-tab", _TOMCAT_LINE),
            ("refuse-c0", "Http11InputBuffer: not a request-target char"),
            ("refuse-del", "Http11InputBuffer: not a request-target char"),
            ("refuse-non-ascii", "Http11InputBuffer: not a request-target char"),
            ("refuse-rfc7230", "Http11InputBuffer: relaxedPathChars and relaxedQueryChars unset"),
            ("cut-query", "Http11InputBuffer"),
            ("strip-params", _TOMCAT),
            (
                "decode-refuse-nul-slash-backslash",
                "UDecoder: encodedSolidusHandling reject, allowBackslash false",
            ),
            ("merge-slashes", _TOMCAT),
            ("dots-refuse-no-slash", _TOMCAT + ": above the root is 400"),
            ("charset-refuse", "URIEncoding UTF-8: malformed is 400"),
        ),
        _model(
            "jetty",
            "Eclipse Jetty",
            "9.4.57",
            True,
            "jetty.http.compliance (RFC7230_LEGACY in Debian's etc/jetty-http.xml; RFC7230 "
            "refuses ambiguous paths)",
            ("line-sp", "HttpParser: spaces before the version are skipped"),
            ("refuse-c0", "HttpParser: 400"),
            ("refuse-invalid-utf8", "HttpParser: the target is UTF-8"),
            (
                "cut-query-fragment-unescaped",
                _JETTY + ": the characters of an escape are its digits",
            ),
            ("refuse-dot-params", _JETTY + ": an ambiguous segment is 400"),
            ("jetty-params", _JETTY + ": HttpURI.parse"),
            ("dots-refuse", _JETTY + ": canonicalPath; above the root is 400"),
            ("charset-utf16", "URIUtil.decodePath: not UTF-8, then ISO-8859-1"),
        ),
        _model(
            "caddy",
            "Caddy, what a handler sees ({http.request.uri.path})",
            "2.6.2",
            True,
            "none",
            ("refuse-c0", _GO + ": Caddy serves with Go's net/http"),
            ("refuse-del", _GO),
            ("refuse-sp", _GO_LINE),
            ("cut-query", _GO + ": no fragment in a request-target, '#' stays"),
            ("decode", _GO + ": a bad escape is 400"),
            ("charset-bytes", "a Go string holds bytes"),
        ),
        _model(
            "caddy-path",
            "Caddy, what its path and path_regexp matchers test",
            "2.6.2",
            True,
            "none",
            ("refuse-c0", _GO + ": Caddy serves with Go's net/http"),
            ("refuse-del", _GO),
            ("refuse-sp", _GO_LINE),
            ("cut-query", _GO),
            ("decode", _GO),
            ("merge-slashes", _CADDY),
            ("dots-clamp-no-slash", _CADDY + "; a trailing '/' kept"),
            ("charset-bytes", "a Go string holds bytes"),
        ),
        _model(
            "lighttpd",
            'lighttpd, the path its $HTTP["url"] conditions match',
            "1.4.69",
            True,
            "server.http-parseopts (url-path-2f-decode, url-path-dotseg-remove, "
            "url-ctrls-reject...)",
            ("cut-fragment", _LIGHTTPD + ": the fragment goes before any check"),
            ("refuse-c0", _LIGHTTPD),
            ("refuse-del", _LIGHTTPD),
            ("refuse-never-utf8", _LIGHTTPD),
            ("refuse-target-ctl-utf8", _LIGHTTPD + ": url-ctrls-reject, on path and query"),
            ("cut-query", _LIGHTTPD),
            ("decode-lenient-refuse-ctl", _LIGHTTPD),
            ("merge-slashes", _LIGHTTPD + ": url-path-dotseg-remove"),
            ("dots-clamp", _LIGHTTPD + ": url-path-dotseg-remove"),
            ("charset-bytes", _LIGHTTPD + ": bytes that are no UTF-8 were refused above"),
        ),
        _model(
            "haproxy-path",
            "HAProxy, the path an ACL's 'path' fetch matches",
            "2.6.12",
            True,
            "none: no normalize-uri action (see 'haproxy' for all of them)",
            ("refuse-high-haproxy", _HAPROXY_SCAN),
            ("line-sp-tab", _HAPROXY_LINE),
            ("refuse-c0", _HAPROXY_RAW),
            ("refuse-hash", _HAPROXY_RAW),
            ("cut-query", "configuration manual 7.3.6, path: up to the question mark"),
            ("charset-bytes", "ACLs match the path still escaped"),
        ),
        _model(
            "haproxy",
            "HAProxy, http-request normalize-uri (every path normalizer)",
            "2.6.12",
            True,
            "each normalizer is an http-request rule of its own (experimental in 2.6: "
            "expose-experimental-directives); none runs unless configured; measured in the "
            "order path-merge-slashes, percent-decode-unreserved, percent-to-uppercase, "
            "path-strip-dot, path-strip-dotdot; path-strip-dotdot full removes '..' above the root",
            ("refuse-high-haproxy", _HAPROXY_SCAN),
            ("line-sp-tab", _HAPROXY_LINE),
            ("refuse-c0", _HAPROXY_RAW),
            ("refuse-hash", _HAPROXY_RAW),
            ("cut-query", "configuration manual 7.3.6, path: up to the question mark"),
            ("merge-slashes", "normalize-uri path-merge-slashes"),
            ("decode-unreserved-lenient", "normalize-uri percent-decode-unreserved"),
            ("uppercase-escapes", "normalize-uri percent-to-uppercase"),
            ("dots-keep", "normalize-uri path-strip-dot, path-strip-dotdot"),
            ("charset-bytes", "ACLs match the path still escaped"),
        ),
        # --- read from the documentation: no such server runs here
        _model(
            "iis",
            "Microsoft IIS (http.sys and request filtering)",
            "10",
            False,
            "requestFiltering allowDoubleEscaping; http.sys AllowRestrictedChars, EnableNonUTF8",
            ("refuse-c0", "http.sys: a control byte is 400"),
            ("refuse-del", "http.sys: a control byte is 400"),
            ("cut-query", "http.sys"),
            ("cut-fragment", "http.sys"),
            ("decode-u", "http.sys: %XX and %uXXXX decoded; a bad escape is 400"),
            ("backslash", "http.sys: '\\' is a path separator"),
            ("merge-slashes", "http.sys URL canonicalization"),
            ("dots-refuse", "http.sys: above the root is 400"),
            ("refuse-double-escape", "requestFiltering allowDoubleEscaping=false: 404.11"),
            ("charset-utf16", "http.sys EnableNonUTF8: ANSI code page (Latin-1 here)"),
        ),
        _model(
            "envoy",
            "Envoy, normalize_path and merge_slashes on",
            "1.28",
            False,
            "normalize_path and merge_slashes (both off unless configured); "
            "path_with_escaped_slashes_action (KEEP_UNCHANGED by default)",
            ("refuse-c0", "Envoy: 400"),
            ("refuse-del", "Envoy: 400"),
            ("refuse-non-ascii", "Envoy: 400"),
            ("refuse-hash", "Envoy: 400"),
            ("cut-query", "Envoy's :path header"),
            ("backslash", "normalize_path (Chromium's URL path canonicalizer)"),
            ("decode-dots", "normalize_path: %2e is a dot"),
            ("dots-clamp", "normalize_path: RFC 3986 section 5.2.4"),
            ("merge-slashes", "merge_slashes"),
            ("charset-bytes", "routes match the path still escaped"),
        ),
    )
}


# The settings that change a reading, modeled: server -> setting -> value -> the steps that
# change, each by its key ("op" or "op:arg" of the default model's step) and its replacement:
# a step, steps, or None (the step is dropped).  The first value of each setting is the default.
OPTIONS: dict[str, dict[str, dict[str, dict[str, Step | tuple[Step, ...] | None]]]] = {
    "nginx": {"merge_slashes": {"on": {}, "off": {"merge-slashes": None}}},
    "apache": {
        "AllowEncodedSlashes": {
            "Off": {},
            # slashes decoded, then the path normalized again (ap_process_request_internal)
            "On": {
                "decode:apache": (
                    Step("decode", "apache-encoded-slashes-on", _APACHE),
                    Step("merge-slashes", "", _APACHE + ": normalized again"),
                    Step("dots", "clamp", _APACHE + ": normalized again, its failure ignored"),
                )
            },
            "NoDecode": {
                "decode:apache": Step("decode", "apache-encoded-slashes-nodecode", _APACHE)
            },
        },
        "MergeSlashes": {"On": {}, "Off": {"merge-slashes": None}},
    },
    "tomcat": {
        "encodedSolidusHandling": {
            "reject": {},
            "decode": {"decode:tomcat": Step("decode", "tomcat-solidus-decode", _TOMCAT)},
            "passthrough": {"decode:tomcat": Step("decode", "tomcat-solidus-passthrough", _TOMCAT)},
        }
    },
}
