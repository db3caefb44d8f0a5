"""Many URLs at once: the loops of the batch CLI and of the data-frame integrations.

Each is one `canonicalize` call per URL, as a ``for`` loop over it would be; with the compiled
twin the loop itself runs in C too (``_speedups.urls`` and ``_speedups.columns``), so that a
million URLs cost no million Python frames of glue.  The functions here are the reference the
compiled loops are held to (tests/core/test_many.py).
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator, Sequence

# The loops in C take the C entry: None without it (URLSAN_NO_EXTENSIONS, no compiler).
from .canonical import canonicalize
from .canonical import columns_in_c as _columns_in_c
from .canonical import urls_in_c as _urls_in_c
from .policy import Policy
from .result import InvalidTarget

Columns = tuple[list[str | None], list[bool | None], list[list[str] | None]]

# ASCII white space, as around a line of text (its newline, a CR before it, indentation).
BLANKS = " \t\r\n\x0b\x0c"


def urls(
    texts: Sequence[str],
    policy: Policy,
    form: str = "auto",
    blanks: str = BLANKS,
    longest: int = sys.maxsize,
) -> list[str]:
    """The canonical URL of each text stripped of ``blanks``, ending before the first text that
    is longer than ``longest`` characters (blanks included), is blank or raises: ``len(result)``
    says where, and the caller takes that text and the rest the slow way, which says why."""
    if _urls_in_c is not None and type(texts) is list:
        return _urls_in_c(canonicalize, texts, policy, form, blanks, longest)
    return _urls(texts, policy, form, blanks, longest)


def _urls(
    texts: Sequence[str], policy: Policy, form: str, blanks: str, longest: int = sys.maxsize
) -> list[str]:
    out: list[str] = []
    append = out.append
    for item in texts:
        text = item.strip(blanks) if type(item) is str and len(item) <= longest else ""
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

    Surrounding ASCII white space (`BLANKS`: a text line's newline) is not part of the URL.
    None, NaN, any other non-str and a blank string give None in all three; a URL the policy
    refuses gives url None, changed False and the refusing rule; else the canonical URL,
    whether it differs from the (stripped) input, and the rules that fired, each once, in the
    order they ran."""
    with collector_paused():
        if _columns_in_c is not None and type(values) is list:
            return _columns_in_c(canonicalize, values, policy, BLANKS)  # type: ignore[no-any-return]
        return _columns(values, policy)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a batch builds a container per row.

    A million rows are a million new lists or dicts: each 700 new containers set the collector
    off, and its passes walk the rows built so far, which costs a third of the time of
    canonicalizing them (bench/integrations.py).  Rows of str, bool and lists of str hold no
    cycles; the collector runs again, as it was, when the batch is done."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _columns(values: Sequence[object], policy: Policy) -> Columns:
    urls_: list[str | None] = []
    changed: list[bool | None] = []
    rules: list[list[str] | None] = []
    for value in values:
        url = value.strip(BLANKS) if isinstance(value, str) else ""
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
