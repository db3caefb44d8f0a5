"""Many URLs at once: the loops of the batch CLI and of the data-frame integrations.

Each is one `canonicalize` call per URL, as a ``for`` loop over it would be; with the compiled
twin the loop itself runs in C too (``_speedups.urls`` and ``_speedups.columns``), so that a
million URLs cost no million Python frames of glue.  The functions here are the reference the
compiled loops are held to (tests/core/test_many.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import FunctionType

from . import compiled
from .canonical import canonicalize
from .policy import Policy
from .result import InvalidTarget

# The loops in C need the C entry: not there without the twin (URLSAN_NO_EXTENSIONS, no compiler).
_COMPILED = compiled.urls is not None and not isinstance(canonicalize, FunctionType)

Columns = tuple[list[str | None], list[bool | None], list[list[str] | None]]


def urls(
    texts: Sequence[str], policy: Policy, form: str = "auto", blanks: str = " \t"
) -> list[str]:
    """The canonical URL of each text stripped of ``blanks``, ending before the first text that
    is blank or raises: ``len(result)`` says where, and the caller takes that text and the rest
    the slow way, which says why."""
    if _COMPILED and compiled.urls is not None and type(texts) is list:
        return compiled.urls(canonicalize, texts, policy, form, blanks)
    return _urls(texts, policy, form, blanks)


def _urls(texts: Sequence[str], policy: Policy, form: str, blanks: str) -> list[str]:
    out: list[str] = []
    append = out.append
    for item in texts:
        text = item.strip(blanks) if type(item) is str else ""
        if not text:
            break
        try:
            append(canonicalize(text, policy, form=form).url)
        except Exception:  # InvalidTarget, or a bug: the caller's slow path reports either
            break
    return out


def columns(values: Sequence[object], policy: Policy) -> Columns:
    """The url, changed and rules of each value, as three lists (the data-frame integrations'
    result columns).

    Surrounding white space (a text line's newline) is not part of the URL.  None, NaN, any
    other non-str and a blank string give None in all three; a URL the policy refuses gives
    url None, changed False and the refusing rule; else the canonical URL, whether it differs
    from the (stripped) input, and the rules that fired, each once, in the order they ran."""
    if _COMPILED and compiled.columns is not None and type(values) is list:
        return compiled.columns(canonicalize, values, policy)  # type: ignore[no-any-return]
    return _columns(values, policy)


def _columns(values: Sequence[object], policy: Policy) -> Columns:
    urls_: list[str | None] = []
    changed: list[bool | None] = []
    rules: list[list[str] | None] = []
    for value in values:
        url = value.strip() if isinstance(value, str) else ""
        if not url:
            urls_.append(None)
            changed.append(None)
            rules.append(None)
            continue
        try:
            result = canonicalize(url, policy)
        except InvalidTarget as e:
            urls_.append(None)
            changed.append(False)
            rules.append([e.rule])
            continue
        urls_.append(result.url)
        changed.append(result.url != url)
        rules.append(list(dict.fromkeys(e.rule for e in result.edits)))
    return urls_, changed, rules
