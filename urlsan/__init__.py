"""urlsan — a URL sanitizer for mitmproxy: RFC 3986 canonicalization with a record of every rewrite.

The distribution is one package per use (docs/layout.md):

    urlsan.core     the canonicalizer: `canonicalize`, `Policy`, `Result` (stdlib + idna only)
    urlsan.audit    the audit record, its JSON Lines writer, redaction, and the report
    urlsan.addon    the mitmproxy addon (needs ``urlsan[proxy]``)
    urlsan.cli      the `urlsan` command (also ``python -m urlsan``)

and the crawler integrations beside this file: ``urlsan.scrapy``, ``urlsan.spark``,
``urlsan.dask``.  Nothing is imported here, so ``import urlsan.core`` stays small.
"""

__version__ = "0.1.0"
