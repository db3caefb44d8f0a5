"""urlsan.addon — the mitmproxy addon that sanitizes every request-target.

    mitmdump -s addon/script.py          # from a checkout
    urlsan proxy --set urlsan_mode=audit # the installed command

`UrlSanitizer` is imported lazily, so that ``urlsan proxy`` can explain a missing mitmproxy
instead of failing with an ImportError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sanitizer import UrlSanitizer

__all__ = ["UrlSanitizer"]


def __getattr__(name: str) -> Any:
    if name == "UrlSanitizer":
        from .sanitizer import UrlSanitizer

        return UrlSanitizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
