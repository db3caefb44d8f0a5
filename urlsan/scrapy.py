"""urlsan in Scrapy: a request fingerprinter, a downloader middleware, `canonicalize_url` and
`surt_url`.

    # settings.py
    REQUEST_FINGERPRINTER_CLASS = "urlsan.scrapy.RequestFingerprinter"
    URLSAN_PROFILE = "crawler"                  # the default
    URLSAN_RULES = "+merge-slashes"             # rules on/off on top of the profile
    URLSAN_DROP_PARAMS = ["example.com:ref,src"]  # more parameters to drop
    URLSAN_KEEP_PARAMS = "shop.example:id,page"   # an allowlist for a host
    URLSAN_FINGERPRINT_KEY = "url"              # or "surt", "surt-urlsan": what is hashed
    DOWNLOADER_MIDDLEWARES = {"urlsan.scrapy.CanonicalUrlMiddleware": 50}  # optional

`RequestFingerprinter` keys Scrapy's duplicate filter and HTTP cache on urlsan's canonical form;
`CanonicalUrlMiddleware` also sends the canonical URL; `Addon` (for Scrapy's ``ADDONS``) sets up
both from the ``URLSAN_*`` settings.  `canonicalize_url` is a drop-in for
`w3lib.url.canonicalize_url`; `surt_url` gives the SURT key a web archive files a URL under.

Nothing here imports Scrapy: the classes only use the request and crawler objects Scrapy hands
them, so ``from urlsan.scrapy import canonicalize_url`` works where Scrapy is not installed.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import ParseResult, quote_from_bytes, urlunparse
from weakref import WeakKeyDictionary

from urlsan.core import InvalidTarget, Policy, Result, canonicalize
from urlsan.core.options import OptionNames, policy_from_options
from urlsan.core.params import split_specs
from urlsan.core.severity import assess
from urlsan.core.surt import surt, urlsan_key

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = [
    "Addon",
    "CanonicalUrlMiddleware",
    "RequestFingerprinter",
    "canonicalize_url",
    "policy_from_settings",
    "surt_url",
]

CRAWLER = Policy.profile("crawler")

# request.meta keys the middleware sets (facts for other middlewares and for the spider).
META_RULES = "urlsan_rules"  # the rules that fired, in the order they ran
META_ORIGINAL_URL = "urlsan_original_url"  # the URL before the rewrite
# A URL with findings: its severity and why (urlsan.core.severity), {"severity", "reason"}.
META_SEVERITY = "urlsan_severity"

# URLSAN_FINGERPRINT_KEY: what the fingerprint hashes in place of the URL.
FINGERPRINT_KEYS = ("url", "surt", "surt-urlsan")


class _Settings(Protocol):
    def get(self, name: str, default: Any = None) -> Any: ...


def policy_from_settings(settings: _Settings) -> Policy:
    """The policy the ``URLSAN_*`` settings describe; `ValueError` names the bad setting.

    ``URLSAN_DROP_PARAMS`` and ``URLSAN_KEEP_PARAMS`` are read whole, not with Scrapy's
    ``getlist``: a spec such as ``example.com:ref,src`` holds commas of its own.  A string may
    hold several specs separated by ``;`` or newlines, a list one per item.
    """
    return policy_from_options(
        str(settings.get("URLSAN_PROFILE") or "crawler"),
        settings.get("URLSAN_RULES") or "",  # a spec, or a list of rule switches
        split_specs(settings.get("URLSAN_DROP_PARAMS") or ()),
        split_specs(settings.get("URLSAN_KEEP_PARAMS") or ()),
        names=_SETTINGS,
    )


_SETTINGS = OptionNames(
    "URLSAN_PROFILE", "URLSAN_RULES", "URLSAN_DROP_PARAMS", "URLSAN_KEEP_PARAMS"
)


def _rules_fired(result: Result) -> tuple[str, ...]:
    return tuple(dict.fromkeys(edit.rule for edit in result.edits))


class RequestFingerprinter:
    """Scrapy's request fingerprinter (``REQUEST_FINGERPRINTER_CLASS``), keyed on urlsan.

    Scrapy's contract, kept as its default fingerprinter keeps it: a SHA-1 over the method, the
    canonical URL and the body (headers are left out), cached per request; a request with
    ``meta["verbatim_url"]`` is keyed on its URL as written.  The canonical URL is urlsan's under
    the ``URLSAN_*`` settings (default: the ``crawler`` profile) instead of w3lib's.

    ``URLSAN_FINGERPRINT_KEY`` (``key``) chooses what is hashed in place of the URL: ``"url"``
    (the default) the canonical URL; ``"surt"`` the SURT key web archives file the canonical URL
    under (`surt_url`'s ia profile, which also merges ``http`` with ``https``, ``www.`` with
    none, case, the query's order, session ids and escapes: a crawl fetches once what an
    archive would hold as one capture); ``"surt-urlsan"`` the canonical URL as a SURT key
    (``profile="urlsan"``: merges exactly what ``"url"`` merges, in an archive's sort order).

    A URL the policy refuses (`InvalidTarget`: only the ``strict`` profile and the opt-in
    ``reject-escaped-slash`` rule refuse) is keyed
    on its raw URL: such a request still gets a fingerprint, it only shares it with nothing but
    the same spelling.  The stats count it as ``urlsan/fingerprint/refused``.
    """

    def __init__(
        self, policy: Policy = CRAWLER, crawler: Crawler | None = None, key: str = "url"
    ) -> None:
        if key not in FINGERPRINT_KEYS:
            raise ValueError(
                f"URLSAN_FINGERPRINT_KEY: {key!r} is not one of {', '.join(FINGERPRINT_KEYS)}"
            )
        self.policy = policy
        self.key_kind = key
        self._stats = crawler.stats if crawler is not None else None
        self._cache: WeakKeyDictionary[Request, bytes] = WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RequestFingerprinter:
        key = str(crawler.settings.get("URLSAN_FINGERPRINT_KEY") or "url")
        return cls(policy_from_settings(crawler.settings), crawler, key)

    def key(self, request: Request) -> str:
        """What the fingerprint covers in place of the URL: the canonical URL, or its SURT key
        (``URLSAN_FINGERPRINT_KEY``)."""
        url = self.canonical_url(request)
        if self.key_kind == "url" or request.meta.get("verbatim_url"):
            return url
        try:
            return surt(url) if self.key_kind == "surt" else urlsan_key(url)
        except InvalidTarget:  # a refused URL's raw form that cannot be keyed either
            return url

    def canonical_url(self, request: Request) -> str:
        """The canonical URL the fingerprint covers (or whose SURT key it covers)."""
        if request.meta.get("verbatim_url"):
            return request.url
        try:
            return canonicalize(request.url, self.policy).url
        except InvalidTarget:
            if self._stats is not None:
                self._stats.inc_value("urlsan/fingerprint/refused")
            return request.url

    def fingerprint(self, request: Request) -> bytes:
        cached = self._cache.get(request)
        if cached is None:
            # The same JSON document Scrapy's default hashes, so that only the URL differs.
            data = {
                "method": request.method,
                "url": self.key(request),
                "body": (request.body or b"").hex(),
                "headers": {},
            }
            cached = hashlib.sha1(json.dumps(data, sort_keys=True).encode()).digest()
            self._cache[request] = cached
        return cached


class CanonicalUrlMiddleware:
    """A downloader middleware that sends each request to its canonical URL.

    Enable it in ``DOWNLOADER_MIDDLEWARES`` (any order number below 750, so that it runs before
    the proxy and the HTTP cache middlewares) or with ``URLSAN_REWRITE_REQUESTS = True`` and the
    `Addon`.  A request whose URL changes is replaced by ``request.replace(url=canonical)``, with
    the rules that fired in ``meta["urlsan_rules"]`` and the URL as written in
    ``meta["urlsan_original_url"]``; the replacement skips the duplicate filter (the request it
    replaces already passed it).  A URL with findings, rewritten or not, gets its severity and
    why in ``meta["urlsan_severity"]`` (``{"severity": "high", "reason": "..."}``, what the worst
    reader behind a server makes of it) and is counted in ``urlsan/request/severity/<level>``.
    Requests with ``meta["verbatim_url"]``, and URLs the policy refuses, go out as they are.
    Use it with `RequestFingerprinter`, so that the duplicate filter sees the same URL the
    server does.
    """

    def __init__(self, policy: Policy = CRAWLER, crawler: Crawler | None = None) -> None:
        self.policy = policy
        self._stats = crawler.stats if crawler is not None else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CanonicalUrlMiddleware:
        return cls(policy_from_settings(crawler.settings), crawler)

    def process_request(self, request: Request, spider: Any = None) -> Request | None:
        if META_RULES in request.meta or request.meta.get("verbatim_url"):
            return None  # rewritten already (a replacement comes through here again), or exempt
        try:
            result = canonicalize(request.url, self.policy)
        except InvalidTarget:
            self._count("urlsan/request/refused")
            return None
        severity = self._severity(result)
        if result.url == request.url:
            if severity is not None:
                request.meta[META_SEVERITY] = severity
            return None
        self._count("urlsan/request/rewritten")
        meta = {**request.meta, META_RULES: _rules_fired(result), META_ORIGINAL_URL: request.url}
        if severity is not None:
            meta[META_SEVERITY] = severity
        return request.replace(url=result.url, meta=meta, dont_filter=True)

    def _severity(self, result: Result) -> dict[str, str] | None:
        """The URL's severity and why, counted in the stats; None for a URL without findings."""
        found = assess(result.input, result.findings) if result.findings else None
        if found is None:
            return None
        self._count(f"urlsan/request/severity/{found.level}")
        return {"severity": found.level, "reason": found.reason}

    def _count(self, key: str) -> None:
        if self._stats is not None:
            self._stats.inc_value(key)


class Addon:
    """A Scrapy add-on (``ADDONS = {"urlsan.scrapy.Addon": 0}``, Scrapy 2.10 and later).

    Sets ``REQUEST_FINGERPRINTER_CLASS`` to `RequestFingerprinter` and, with
    ``URLSAN_REWRITE_REQUESTS = True``, enables `CanonicalUrlMiddleware`.
    """

    middleware_order = 50  # early: before HttpProxyMiddleware (750) and HttpCacheMiddleware (900)

    def update_settings(self, settings: Any) -> None:
        settings.set("REQUEST_FINGERPRINTER_CLASS", RequestFingerprinter, "addon")
        if not settings.getbool("URLSAN_REWRITE_REQUESTS"):
            return
        if hasattr(settings, "set_in_component_priority_dict"):  # Scrapy 2.13 and later
            settings.set_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES", CanonicalUrlMiddleware, self.middleware_order
            )
        else:
            settings["DOWNLOADER_MIDDLEWARES"][CanonicalUrlMiddleware] = self.middleware_order


# What WHATWG URL §4.4 (and w3lib's safe_url_string) strip from an href before parsing: leading
# and trailing C0 controls and spaces, and every tab and newline.  Pages are full of them.
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")


@lru_cache(maxsize=32)
def _fragments(policy: Policy, keep_fragments: bool) -> Policy:
    return policy.with_rules("-strip-fragment" if keep_fragments else "+strip-fragment")


def _encode_query(url: str, encoding: str) -> str:
    """Percent-encode the non-ASCII characters of the query in ``encoding``, as w3lib does (the
    page's charset); when the query cannot be encoded in it, UTF-8 (urlsan's own) stays."""
    before, hash_, fragment = url.partition("#")  # RFC 3986 Appendix B: "#" ends the query
    base, mark, query = before.partition("?")
    if not mark or query.isascii():
        return url
    try:
        query.encode(encoding)
    except UnicodeEncodeError:
        return url
    query = "".join(c if c.isascii() else quote_from_bytes(c.encode(encoding)) for c in query)
    return f"{base}?{query}{hash_}{fragment}"


def _drop_blank_values(url: str) -> str:
    """Leave out the query parameters with an empty value (``b=``, ``c``) and empty pieces."""
    before, hash_, fragment = url.partition("#")
    base, mark, query = before.partition("?")
    if not mark:
        return url
    kept = "&".join(p for p in query.split("&") if p.partition("=")[2])
    return f"{base}{'?' if kept else ''}{kept}{hash_}{fragment}"


def canonicalize_url(
    url: str | bytes | ParseResult,
    keep_blank_values: bool = True,
    keep_fragments: bool = False,
    encoding: str | None = None,
    *,
    policy: Policy = CRAWLER,
) -> str:
    """A drop-in for `w3lib.url.canonicalize_url` (same arguments) that returns urlsan's
    canonical form under ``policy`` (default: the ``crawler`` profile).  Needs no Scrapy.

    Like w3lib (2.5): lower-case scheme and host, IDNA hosts, upper-case escapes, UTF-8 for
    non-ASCII, dot segments resolved, ``%7E`` → ``~``, the fragment dropped unless
    ``keep_fragments``, blank values dropped unless ``keep_blank_values``, leading and trailing
    spaces and controls and every tab and newline removed, ``encoding`` for non-ASCII in the
    query.  Where it differs, urlsan keeps apart what RFC 3986 says may differ and drops what a
    crawler does not want:

    * the query is sorted by name only, stably: ``b=5&b=2`` stays in that order (w3lib sorts the
      values too, and the order of a repeated parameter can matter);
    * ``+``, ``%20`` and a space in the query are not merged (w3lib writes ``+`` for all three):
      only HTML forms read ``+`` as a space.  ``+`` and ``%2B`` stay apart in both;
    * reserved escapes stay escaped: ``%2C`` is not ``,`` and ``%3D`` is not ``=``
      (w3lib decodes some reserved escapes in the path, and rewrites the query through
      form-decoding: ``?1750,4`` becomes ``?1750%2C4=``, and ``c`` becomes ``c=``);
    * the default port goes (``:80`` for http); w3lib keeps it;
    * tracking parameters go (``utm_*``, ``fbclid``, ``gclid``, … : the ``drop-params`` rule),
      and so do a trailing dot of the host and an empty query; numeric hosts are read
      (``0x7f.1`` → ``127.0.0.1``);
    * a relative reference stays relative (w3lib turns ``?b=1`` into ``/?b=1``), and w3lib 2.5's
      ``query_separator`` keyword is not supported (urlsan splits the query on ``&``).

    A URL ``policy`` refuses raises `urlsan.core.InvalidTarget` (a `ValueError`); the
    ``crawler`` profile refuses nothing.
    """
    if isinstance(url, ParseResult):
        url = urlunparse(url)
    if isinstance(url, bytes):
        url = url.decode("utf-8", "surrogateescape")  # as urlsan.core reads bytes
    url = url.strip(_C0_OR_SPACE).translate(_TAB_OR_NEWLINE)
    if encoding is not None and encoding.replace("-", "").replace("_", "").lower() != "utf8":
        url = _encode_query(url, encoding)
    canonical = canonicalize(url, _fragments(policy, keep_fragments)).url
    return canonical if keep_blank_values else _drop_blank_values(canonical)


def surt_url(url: str | bytes, profile: str = "ia", *, policy: Policy = CRAWLER) -> str:
    """The SURT key of ``url``, as web archives (Heritrix, pywb, CDX indexes) file it; needs no
    Scrapy.

    ``profile="ia"`` (the default) is what ``surt.surt(url)`` and CDX files write
    (``com,example)/a?b=1``): it merges what an archive treats as one capture (``http`` and
    ``https``, ``www.``, case, the query's order, session ids, escapes).  ``profile="urlsan"``
    is the key of the canonical URL under ``policy`` (``http://(com,example,)/a?b=1``): it
    never merges two URLs that `canonicalize` keeps apart.  `InvalidTarget` (a `ValueError`)
    for a URL the profile cannot key.
    """
    if profile == "ia":
        return surt(url)
    return surt(url, profile=profile, policy=policy)
