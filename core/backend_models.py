r"""How each server behind a proxy reads a request-target, as data: what `backends.py` walks.

A model is the server's steps in order, each a `Step` naming an operation of `backends.py`
and its argument, with the source the step rests on.  ``measured`` models were held against
the real server (tests/backends, on the version named); the others are read from the server's
documentation.  A step's argument is a string, or a frozenset of bytes for the byte sets.

The operations, in the order a server may take them:

``refuse-raw``        refuse when the target holds one of these bytes as sent
``split-line``        the request line is ``METHOD SP target SP HTTP/1.1``: these bytes separate
                      its words, so a run of them at the end of the target (before the version)
                      is a separator the server drops, and one inside it is 400 (too many words)
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
    "jetty": Decoder(refuse=NUL, u_escapes=True, loose_hex=True, latin1_fallback=True, params=True),
}

DOTS: dict[str, Dots] = {
    "refuse": Dots("refuse"),
    "refuse-no-slash": Dots("refuse", "none"),
    "clamp": Dots("clamp"),
    "clamp-no-slash": Dots("clamp", "none"),
    "keep": Dots("keep"),  # ".." above the root stays (HAProxy without "full")
}

_NGINX = "src/http/ngx_http_parse.c, ngx_http_parse_complex_uri"
_APACHE = "server/util.c, ap_normalize_path and ap_unescape_url; server/request.c"
_TOMCAT = "org.apache.catalina.connector.CoyoteAdapter: parsePathParameters, normalize"
_JETTY = "org.eclipse.jetty.http.HttpURI, URIUtil.decodePath and canonicalPath"
_GO = "net/url.ParseRequestURI, (*URL).setPath"
# A second space makes the protocol " HTTP/1.1" or "b HTTP/1.1": 400 (net/http parseRequestLine)
_GO_LINE = "net/http.parseRequestLine: the target ends at the first SP"

MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model(
            "nginx",
            "nginx",
            "1.22.1",
            True,
            (
                Step("split-line", SP, _NGINX + ": ngx_http_parse_request_line, sw_spaces_*"),
                Step("refuse-raw", CONTROLS, _NGINX),
                Step("cut", "?#", _NGINX),
                Step("decode", "nginx", _NGINX + ": %00 is 400"),
                Step("merge-slashes", "", "merge_slashes on (the default)"),
                Step("dots", "refuse", _NGINX + ": above the root is 400"),
                Step("charset", "bytes", "$uri holds bytes"),
            ),
            "merge_slashes off keeps repeated slashes",
        ),
        Model(
            "go",
            "Go net/http, a handler reading r.URL.Path",
            "1.19.8",
            True,
            (
                Step("refuse-raw", CONTROLS | SP, _GO + ": a control byte is 400; " + _GO_LINE),
                Step("cut", "?", _GO + ": no fragment in a request-target, '#' stays"),
                Step("decode", "go", _GO + ": a bad escape is 400"),
                Step("charset", "bytes", "a Go string holds bytes"),
            ),
            "none",
        ),
        Model(
            "go-mux",
            "Go net/http ServeMux",
            "1.19.8",
            True,
            (
                Step("refuse-raw", CONTROLS | SP, _GO + "; " + _GO_LINE),
                Step("cut", "?", _GO),
                Step("decode", "go", _GO),
                Step("merge-slashes", "", "net/http cleanPath: path.Clean"),
                Step("dots", "clamp-no-slash", "path.Clean; cleanPath keeps a trailing '/'"),
                Step("charset", "bytes", "a Go string holds bytes"),
            ),
            "none: the mux redirects (301) to the clean path, and routes that",
        ),
        Model(
            "node",
            "Node http, routed as Express 4 routes",
            "20.20.2",
            True,
            (
                Step("split-line", SP, "llhttp: spaces before the version are skipped"),
                Step("refuse-raw", CONTROLS | NON_ASCII, "llhttp: bytes outside the URL table"),
                Step("cut", "?#", "parseurl: the pathname"),
                Step("decode", "node", "decodeURIComponent: URIError is 400"),
                Step("charset", "bytes", "JavaScript text"),
            ),
            "none",
        ),
        Model(
            "werkzeug",
            "werkzeug's WSGI server, request.path",
            "3.1.9",
            True,
            (
                Step("split-line", PY_WHITESPACE, "http.server: str.split() of the request line"),
                Step("leading-slashes", "", "http.server: gh-87389"),
                Step("cut", "?#", "urllib.parse.urlsplit"),
                Step("decode", "werkzeug", "urllib.parse.unquote"),
                Step("lstrip-slashes", "", "werkzeug Request.path"),
                Step("charset", "replace", "unquote(errors='replace')"),
            ),
            "none",
        ),
        Model(
            "apache",
            "Apache httpd",
            "2.4.71",
            True,
            (
                Step(
                    "refuse-raw",
                    CONTROLS | SP | frozenset(b"#"),
                    "server/protocol.c: 400; HttpProtocolOptions Strict: one SP between words",
                ),
                Step("cut", "?", "apr_uri_parse"),
                Step("leading-slashes", "", "server/protocol.c, ap_parse_uri"),
                Step("decode", "apache-unreserved", _APACHE + ": AP_NORMALIZE_DECODE_UNRESERVED"),
                Step("merge-slashes", "", "MergeSlashes On (the default)"),
                Step("dots", "refuse", _APACHE + ": above the root is 400"),
                Step("decode", "apache", _APACHE + ": AllowEncodedSlashes Off: %2F is 404"),
                Step("charset", "bytes", "r->uri holds bytes"),
            ),
            "AllowEncodedSlashes On decodes %2F, NoDecode keeps it; MergeSlashes Off",
        ),
        Model(
            "tomcat",
            "Apache Tomcat",
            "10.1.60",
            True,
            (
                Step(
                    "split-line",
                    SP | frozenset(b"\t"),
                    "Http11InputBuffer: SP or HTAB end the target",
                ),
                Step("refuse-raw", TOMCAT_RAW, "Http11InputBuffer: not a request-target char"),
                Step("cut", "?", "Http11InputBuffer"),
                Step("strip-params", "each", _TOMCAT),
                Step(
                    "decode",
                    "tomcat",
                    "UDecoder: encodedSolidusHandling reject, allowBackslash false",
                ),
                Step("merge-slashes", "", _TOMCAT),
                Step("dots", "refuse-no-slash", _TOMCAT + ": above the root is 400"),
                Step("charset", "refuse", "URIEncoding UTF-8: malformed is 400"),
            ),
            "Connector encodedSolidusHandling (decode, passthrough), allowBackslash, "
            "relaxedPathChars",
        ),
        Model(
            "jetty",
            "Eclipse Jetty",
            "9.4.57",
            True,
            (
                Step("split-line", SP, "HttpParser: spaces before the version are skipped"),
                Step("refuse-raw", CONTROLS - frozenset(b"\x7f"), "HttpParser: 400"),
                Step("refuse-raw-utf8", "", "HttpParser: the target is UTF-8"),
                Step("cut-escaped", "?#", _JETTY + ": the characters of an escape are its digits"),
                Step("refuse-dot-param", "", _JETTY + ": an ambiguous segment is 400"),
                Step("jetty-path", "", _JETTY + ": HttpURI.parse"),
                Step("dots", "refuse", _JETTY + ": canonicalPath; above the root is 400"),
                Step("charset", "text", "URIUtil.decodePath: not UTF-8, then ISO-8859-1"),
            ),
            "jetty.http.compliance (RFC7230_LEGACY in Debian's etc/jetty-http.xml; RFC7230 "
            "refuses ambiguous paths)",
        ),
        # --- read from the documentation: no such server runs here
        Model(
            "iis",
            "Microsoft IIS (http.sys and request filtering)",
            "10",
            False,
            (
                Step("refuse-raw", CONTROLS, "http.sys: a control byte is 400"),
                Step("cut", "?#", "http.sys"),
                Step("decode", "iis", "http.sys: %XX and %uXXXX decoded; a bad escape is 400"),
                Step("backslash", "", "http.sys: '\\' is a path separator"),
                Step("merge-slashes", "", "http.sys URL canonicalization"),
                Step("dots", "refuse", "http.sys: above the root is 400"),
                Step(
                    "refuse-decoded",
                    frozenset(b"%+"),
                    "requestFiltering allowDoubleEscaping=false: 404.11",
                ),
                Step("charset", "text", "http.sys EnableNonUTF8: ANSI code page (Latin-1 here)"),
            ),
            "requestFiltering allowDoubleEscaping; http.sys AllowRestrictedChars, EnableNonUTF8",
        ),
        Model(
            "haproxy",
            "HAProxy, http-request normalize-uri (every path normalizer)",
            "2.4",
            False,
            (
                Step("refuse-raw", CONTROLS | NON_ASCII | frozenset(b"#"), "HAProxy: 400"),
                Step("cut", "?", "the path sample fetch"),
                Step("merge-slashes", "", "normalize-uri path-merge-slashes"),
                Step("decode", "unreserved", "normalize-uri percent-decode-unreserved"),
                Step("uppercase-escapes", "", "normalize-uri percent-to-uppercase"),
                Step("dots", "keep", "normalize-uri path-strip-dot, path-strip-dotdot"),
                Step("charset", "bytes", "ACLs match the path still escaped"),
            ),
            "each normalizer is an http-request rule of its own; none runs unless configured; "
            "path-strip-dotdot full removes '..' above the root",
        ),
        Model(
            "envoy",
            "Envoy, normalize_path and merge_slashes on",
            "1.28",
            False,
            (
                Step("refuse-raw", CONTROLS | NON_ASCII | frozenset(b"#"), "Envoy: 400"),
                Step("cut", "?", "Envoy's :path header"),
                Step("backslash", "", "normalize_path (Chromium's URL path canonicalizer)"),
                Step("decode", "dots-only", "normalize_path: %2e is a dot"),
                Step("dots", "clamp", "normalize_path: RFC 3986 section 5.2.4"),
                Step("merge-slashes", "", "merge_slashes"),
                Step("charset", "bytes", "routes match the path still escaped"),
            ),
            "normalize_path and merge_slashes (both off unless configured); "
            "path_with_escaped_slashes_action (KEEP_UNCHANGED by default)",
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
