"""urlsan.scrapy: the fingerprinter and the middleware in real Scrapy crawls, and
`canonicalize_url` against w3lib's own test vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import ParseResult

import pytest

from tests.integrations.crawl_site import CANONICAL, SITE, Site
from urlsan.core import InvalidTarget, Policy, canonicalize

scrapy = pytest.importorskip("scrapy", reason="Scrapy comes with the test extra")

from scrapy.settings import Settings  # noqa: E402
from scrapy.utils.request import RequestFingerprinter as ScrapyFingerprinter  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from urlsan.scrapy import (  # noqa: E402
    Addon,
    CanonicalUrlMiddleware,
    RequestFingerprinter,
    canonicalize_url,
    policy_from_settings,
    surt_url,
)

HERE = Path(__file__).resolve().parent
CRAWLER = Policy.profile("crawler")
FINGERPRINTER = "REQUEST_FINGERPRINTER_CLASS=urlsan.scrapy.RequestFingerprinter"


def crawl(tmp_path: Path, *settings: str) -> list[str]:
    """Crawl the site with `scrapy runspider` and these ``-s`` settings; the URLs it received."""
    args = [arg for setting in settings for arg in ("-s", setting)]
    with Site() as site:
        job = subprocess.run(
            [sys.executable, "-m", "scrapy", "runspider", str(HERE / "crawl_spider.py"),
             "-a", f"start={SITE}/", "-a", f"proxy={site.proxy}", *args],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert job.returncode == 0, job.stderr[-3000:]
    assert "Traceback" not in job.stderr, job.stderr[-3000:]
    return site.requests


def canonical(url: str) -> str:
    return canonicalize(url, CRAWLER).url


# --- real crawls ---------------------------------------------------------------------------


def test_fingerprinter_fetches_each_resource_once(tmp_path: Path) -> None:
    received = crawl(tmp_path, FINGERPRINTER)
    # Each resource once, whichever spelling came first; %2F and /, + and %2B are different
    # resources and are fetched twice.
    assert sorted(Counter(map(canonical, received))) == CANONICAL
    assert len(received) == len(CANONICAL), received


def test_middleware_sends_canonical_urls(tmp_path: Path) -> None:
    received = crawl(tmp_path, FINGERPRINTER, "URLSAN_REWRITE_REQUESTS=True",
                     'ADDONS={"urlsan.scrapy.Addon": 0}')  # fmt: skip
    assert sorted(received) == CANONICAL


def test_middleware_enabled_as_a_downloader_middleware(tmp_path: Path) -> None:
    received = crawl(
        tmp_path, FINGERPRINTER,
        'DOWNLOADER_MIDDLEWARES={"urlsan.scrapy.CanonicalUrlMiddleware": 50}',
    )  # fmt: skip
    assert sorted(received) == CANONICAL


def test_surt_fingerprint_fetches_each_archived_resource_once(tmp_path: Path) -> None:
    # Keyed as a web archive files the canonical URL: %2F and /, + and %2B in the query are
    # one capture there, so one fetch each here; the tracking parameters are dropped first.
    received = crawl(tmp_path, FINGERPRINTER, "URLSAN_FINGERPRINT_KEY=surt")
    keys = Counter(surt_url(canonical(url)) for url in received)
    assert sorted(keys) == sorted(
        ["test,site)/", "test,site)/~guide/intro", "test,site)/about", "test,site)/a/b",
         "test,site)/search?q=a+b"]
    )  # fmt: skip
    assert set(keys.values()) == {1}, received


def test_scrapys_default_fingerprint_fetches_duplicates(tmp_path: Path) -> None:
    # What urlsan saves: w3lib 2.5 merges %7E and ~ and resolves dot segments, but keeps the
    # default port and the tracking parameters.
    received = crawl(tmp_path)
    assert sorted(set(map(canonical, received))) == CANONICAL
    assert len(received) > len(CANONICAL)
    assert f"{SITE}:80/about" in received and f"{SITE}/about?fbclid=IwAR0" in received


# --- the fingerprinter and the middleware, in process ------------------------------------------


def fingerprinter(**settings: Any) -> RequestFingerprinter:
    return RequestFingerprinter.from_crawler(get_crawler(settings_dict=settings))


def prints(fp: RequestFingerprinter, *urls: str, **kwargs: Any) -> set[bytes]:
    return {fp.fingerprint(scrapy.Request(url, **kwargs)) for url in urls}


SPELLINGS = (
    "http://example.com/~guide/intro",
    "HTTP://Example.COM:80/%7Eguide/./intro",
    "http://example.com/~guide/intro?utm_source=feed#top",
    "http://example.com/%7eguide/x/../intro?",
)


def test_fingerprint_covers_method_url_and_body() -> None:
    fp = fingerprinter()
    (one,) = prints(fp, *SPELLINGS)
    assert prints(fp, SPELLINGS[0], method="POST") != {one}
    assert prints(fp, SPELLINGS[0], method="POST", body=b"a") != prints(
        fp, SPELLINGS[0], method="POST", body=b"b"
    )
    assert prints(fp, "http://example.com/other") != {one}


def test_fingerprint_of_a_canonical_url_is_scrapys() -> None:
    # The same document is hashed: HTTP caches and job directories written with Scrapy's default
    # stay valid for URLs that both canonicalize alike.
    request = scrapy.Request("http://example.com/a?b=1&c=2", method="POST", body=b"x")
    assert fingerprinter().fingerprint(request) == ScrapyFingerprinter().fingerprint(request)


def test_fingerprint_is_cached_per_request() -> None:
    fp = fingerprinter()
    request = scrapy.Request(SPELLINGS[1])
    assert fp.fingerprint(request) is fp.fingerprint(request)
    assert request in fp._cache


def test_settings_choose_the_policy() -> None:
    meaning_kept = fingerprinter(URLSAN_PROFILE="rfc3986")
    assert len(prints(meaning_kept, *SPELLINGS)) == 2  # the tracking parameter is kept
    merged = fingerprinter(URLSAN_RULES="+merge-slashes")
    assert len(prints(merged, "http://e.com//a", "http://e.com/a")) == 1
    assert len(prints(fingerprinter(), "http://e.com//a", "http://e.com/a")) == 2


def test_parameter_settings() -> None:
    ref = ("http://e.com/p?id=1", "http://e.com/p?id=1&ref=x", "http://e.com/p?ref=y&id=1")
    assert len(prints(fingerprinter(), *ref)) == 3
    assert len(prints(fingerprinter(URLSAN_DROP_PARAMS="ref"), *ref)) == 1
    # A list, and a spec with commas of its own (Scrapy's getlist would split it).
    scoped = fingerprinter(URLSAN_DROP_PARAMS=["e.com:ref,src", "other.org:x"])
    assert len(prints(scoped, *ref, "http://e.com/p?id=1&src=a")) == 1
    assert len(prints(scoped, "http://f.com/p?ref=1", "http://f.com/p")) == 2
    # An allowlist: on shop.test, every parameter but id goes.
    keep = fingerprinter(URLSAN_KEEP_PARAMS="shop.test:id")
    assert len(prints(keep, "http://shop.test/?id=1&sort=a", "http://shop.test/?id=1")) == 1
    assert len(prints(keep, "http://shop.test/?id=1", "http://shop.test/?id=2")) == 2


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("URLSAN_PROFILE", "nonsense"),
        ("URLSAN_RULES", "+no-such-rule"),
        ("URLSAN_DROP_PARAMS", "a:b:c"),
    ],
)
def test_bad_settings_name_the_setting(setting: str, value: str) -> None:
    with pytest.raises(ValueError, match=setting):
        fingerprinter(**{setting: value})


def test_refused_url_falls_back_to_the_raw_url() -> None:
    crawler = get_crawler(settings_dict={"URLSAN_RULES": "+reject-escaped-slash"})
    fp = RequestFingerprinter.from_crawler(crawler)
    request = scrapy.Request("http://E.com:80/a%2fb")
    with pytest.raises(InvalidTarget):
        canonicalize(request.url, fp.policy)
    assert fp.canonical_url(request) == request.url
    assert fp.fingerprint(request) != fp.fingerprint(scrapy.Request("http://e.com/a%2fb"))
    assert crawler.stats is not None
    assert crawler.stats.get_value("urlsan/fingerprint/refused") == 3  # one per look-up


def test_surt_key_merges_what_an_archive_merges() -> None:
    archived = ("http://www.Example.com/a/?b=1&a=2", "https://example.com/a?a=2&b=1")
    assert len(prints(fingerprinter(), *archived)) == 2
    assert len(prints(fingerprinter(URLSAN_FINGERPRINT_KEY="surt"), *archived)) == 1
    surt_urlsan = fingerprinter(URLSAN_FINGERPRINT_KEY="surt-urlsan")
    assert len(prints(surt_urlsan, *archived)) == 2
    assert len(prints(surt_urlsan, *SPELLINGS)) == 1  # as many merged as by the canonical URL
    request = scrapy.Request(archived[0])
    assert surt_urlsan.key(request) == "http://(com,example,www,)/a/?a=2&b=1"
    assert fingerprinter(URLSAN_FINGERPRINT_KEY="surt").key(request) == "com,example)/a?a=2&b=1"


def test_bad_fingerprint_key_names_the_setting() -> None:
    with pytest.raises(ValueError, match="URLSAN_FINGERPRINT_KEY: 'surtt' is not one of"):
        fingerprinter(URLSAN_FINGERPRINT_KEY="surtt")


def test_surt_url() -> None:
    assert surt_url("HTTP://www.Example.com:80/a/?b=2&a=1#x") == "com,example)/a?a=1&b=2"
    assert surt_url(b"http://example.com/a?utm_source=x&b=1", "urlsan") == (
        "http://(com,example,)/a?b=1"
    )
    with pytest.raises(InvalidTarget):
        surt_url("http://example.com:x/")


def test_verbatim_url_is_keyed_as_written() -> None:
    fp = fingerprinter()
    verbatim = {"verbatim_url": True}
    assert len(prints(fp, SPELLINGS[0], SPELLINGS[1], meta=verbatim)) == 2


def middleware(**settings: Any) -> CanonicalUrlMiddleware:
    return CanonicalUrlMiddleware.from_crawler(get_crawler(settings_dict=settings))


def test_middleware_replaces_the_request() -> None:
    mw = middleware()
    request = scrapy.Request(SPELLINGS[1], meta={"proxy": "http://p:8080"}, priority=3)
    replaced = mw.process_request(request)
    assert replaced is not None
    assert replaced.url == "http://example.com/~guide/intro"
    # Scrapy lower-cases the scheme and host itself (w3lib's safe_url_string).
    assert replaced.meta["urlsan_rules"] == (
        "drop-default-port", "decode-unreserved", "remove-dot-segments",
    )  # fmt: skip
    assert replaced.meta["urlsan_original_url"] == request.url
    assert replaced.meta["proxy"] == "http://p:8080" and replaced.priority == 3
    assert replaced.dont_filter  # the request it replaces passed the duplicate filter
    assert mw.process_request(replaced) is None  # no second rewrite
    assert mw.process_request(scrapy.Request("http://example.com/a")) is None
    assert mw.process_request(scrapy.Request(SPELLINGS[1], meta={"verbatim_url": True})) is None


def test_middleware_says_how_severe_a_url_with_findings_is() -> None:
    """Rewritten or not, a URL with findings carries its severity and why; one without none."""
    crawler = get_crawler(settings_dict={})
    crawler.stats.open_spider(None)
    mw = CanonicalUrlMiddleware.from_crawler(crawler)
    replaced = mw.process_request(scrapy.Request("http://e.com/a//../../etc/passwd"))
    assert replaced is not None
    severity = replaced.meta["urlsan_severity"]
    assert severity["severity"] == "critical"
    assert severity["reason"].endswith("reaches above the root: /../etc/passwd")
    doi = scrapy.Request("https://link.springer.com/chapter/10.1007%2F978-1-4471-6374-9_5")
    assert mw.process_request(doi) is None
    assert doi.meta["urlsan_severity"]["severity"] == "low"
    plain = scrapy.Request("http://e.com/a")
    assert mw.process_request(plain) is None and "urlsan_severity" not in plain.meta
    assert crawler.stats.get_value("urlsan/request/severity/critical") == 1
    assert crawler.stats.get_value("urlsan/request/severity/low") == 1


def test_middleware_leaves_refused_urls_alone() -> None:
    mw = middleware(URLSAN_RULES="+reject-escaped-slash")
    assert mw.process_request(scrapy.Request("http://e.com:80/a%2fb")) is None


def test_addon_sets_up_the_fingerprinter_and_optionally_the_middleware() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    assert settings["REQUEST_FINGERPRINTER_CLASS"] is RequestFingerprinter
    assert CanonicalUrlMiddleware not in settings.getdict("DOWNLOADER_MIDDLEWARES")
    settings = Settings({"URLSAN_REWRITE_REQUESTS": True})
    Addon().update_settings(settings)
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[CanonicalUrlMiddleware] == 50


def test_policy_from_settings_defaults_to_crawler() -> None:
    assert policy_from_settings(get_crawler().settings) == CRAWLER


# --- canonicalize_url: w3lib's own vectors ---------------------------------------------------

VECTORS = json.loads((HERE.parent / "data" / "w3lib-vectors.json").read_text())["vectors"]

# Where urlsan's answer differs from w3lib 2.5's, on purpose (canonicalize_url's docstring).
DIFFERENT = {
    "http://www.example.com/do?&a=1": "http://www.example.com/do?&a=1",
    "http://www.example.com/do?c=3&b=5&b=2&a=50": "http://www.example.com/do?a=50&b=5&b=2&c=3",
    "http://www.example.com/do?b=&c&a=2": "http://www.example.com/do?a=2&b=&c",
    "http://www.example.com/do?1750,4": "http://www.example.com/do?1750,4",
    "http://www.example.com/do?q=a space&a=1": "http://www.example.com/do?a=1&q=a%20space",
    "http://www.example.com/do?q=a%20space&a=1": "http://www.example.com/do?a=1&q=a%20space",
    "https://example.com/a%23b%2cc#bash": "https://example.com/a%23b%2Cc",
    "http://www.example.com/do?price(\xc2\xa3)=500&a=1": "http://www.example.com/do?a=1&price(%C2%A3)=500",
    "?b=1": "?b=1",
    "http://.éxamplé.com/résumé?q=résumé": "http://.xn--xampl-9raf.com/r%C3%A9sum%C3%A9?q=r%C3%A9sum%C3%A9",
}  # fmt: skip


def _argument(value: Any) -> Any:
    if isinstance(value, dict):
        return value["$bytes_latin1"].encode("latin1")
    return ParseResult(*value) if isinstance(value, list) else value


CANONICALIZE_URL = [
    v for v in VECTORS
    if v["func"] == "w3lib.url.canonicalize_url" and "result" in v
    and "query_separator" not in v["kwargs"]  # not supported: urlsan splits the query on "&"
    and "éxampléé" not in str(v["args"][0])  # a label too long for IDNA: w3lib leaves it raw
]  # fmt: skip


@pytest.mark.parametrize("vector", CANONICALIZE_URL, ids=lambda v: repr(v["args"][0])[:60])
def test_canonicalize_url_against_w3lib_vectors(vector: dict[str, Any]) -> None:
    url = _argument(vector["args"][0])
    expected = vector["result"]
    if not vector["kwargs"]:
        expected = DIFFERENT.get(
            url.decode("latin1") if isinstance(url, bytes) else str(url), expected
        )
    assert canonicalize_url(url, *vector["args"][1:], **vector["kwargs"]) == expected


def test_canonicalize_url_agrees_with_w3lib_on_most_vectors() -> None:
    assert len(CANONICALIZE_URL) > 80
    assert len(DIFFERENT) < len(CANONICALIZE_URL) // 8


def test_canonicalize_url_drops_what_w3lib_keeps() -> None:
    url = "HTTP://Example.COM:80/%7Eguide/./intro?utm_source=feed&b=2&a=1#top"
    assert canonicalize_url(url) == "http://example.com/~guide/intro?a=1&b=2"
    assert (
        canonicalize_url(url, keep_fragments=True) == "http://example.com/~guide/intro?a=1&b=2#top"
    )
    rfc3986 = Policy.profile("rfc3986")
    assert canonicalize_url(url, policy=rfc3986) == (
        "http://example.com/~guide/intro?utm_source=feed&b=2&a=1"
    )


def test_canonicalize_url_needs_no_scrapy() -> None:
    code = (
        "import sys; sys.modules['scrapy'] = None\n"
        "from urlsan.scrapy import canonicalize_url\n"
        "print(canonicalize_url('http://E.com/%7Ea'))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (0, "http://e.com/~a\n"), run.stderr
