"""The mitmproxy script entry: ``mitmdump -s addon/script.py`` (``mitmweb -s``, ``mitmproxy -s``).

Needs urlsan installed in mitmproxy's Python (``pip install -e '.[proxy]'`` from the checkout).
mitmproxy loads this file as a module of its own, outside any package: the import is absolute.
"""

from urlsan.addon.sanitizer import UrlSanitizer

addons = [UrlSanitizer()]
