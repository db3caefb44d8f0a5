"""The mitmproxy script entry: ``mitmdump -s addon/script.py`` (``mitmweb -s``, ``mitmproxy -s``).

Needs urlsan installed in mitmproxy's Python (``pip install -e '.[proxy]'`` from the checkout).
"""

from .sanitizer import UrlSanitizer

addons = [UrlSanitizer()]
