"""The rules on parameters: ``drop-params`` (query and ``;path`` parameters), ``sort-query``,
``drop-empty-query``.

They run after the character rules, on canonical text (none of them is licensed by RFC 3986;
each is opt-in; `params.py` says which parameters are dropped).  The driver runs them for every
target; on the compiled twin's results (which leave them out) it runs them again afterwards, so
they are written once.
"""

from __future__ import annotations

import re
from typing import Protocol

from .params import NameTest
from .result import Edit


class Recorder(Protocol):
    """Where a rule records that it rewrote a component: `rules.Edits` (an `Edit` each), or a
    caller that keeps the rule's name alone (`driver.query_rules_url`)."""

    def whole(
        self, rule: str, component: str, start: int, end: int, before: str, after: str
    ) -> None: ...


# RFC 3986 §3.3: a path segment may carry ";name=value" parameters (Java servlets write
# ";jsessionid=…" into URLs for clients without cookies).
_PATH_PARAM = re.compile(r";([^;/=]*)(?:=[^;/]*)?")


def name(pair: str) -> str:
    """A query parameter's name: what precedes its first "="."""
    return pair.partition("=")[0]


def drop(drops: NameTest | None, edits: Recorder, text: str, start: int, raw: str) -> str | None:
    """drop-params on a query: the parameters ``drops`` names go; None when none is left."""
    if drops is None or not text:
        return text
    kept = "&".join([p for p in text.split("&") if not drops(p.partition("=")[0])])  # name(p)
    if kept == text:
        return text
    edits.whole("drop-params", "query", start, start + len(raw), text, kept)
    return kept or None  # nothing of the query is left, not even an empty one


def sort(edits: Recorder, text: str, start: int, raw: str) -> str:
    """sort-query: parameters by name, stably (equal names keep their order)."""
    if "&" not in text:
        return text
    ordered = "&".join(sorted(text.split("&"), key=name))
    if ordered != text:
        edits.whole("sort-query", "query", start, start + len(raw), text, ordered)
    return ordered


def drop_empty(edits: Recorder, text: str, start: int) -> str | None:
    """drop-empty-query: "/a?" → "/a"."""
    if text:
        return text
    edits.whole("drop-empty-query", "query", start - 1, start, "?", "")
    return None


def path_params(drops: NameTest, edits: Recorder, text: str, start: int, raw: str) -> str:
    """drop-params on the ``;name=value`` parameters of every path segment (before dot-segment
    removal and merge-slashes, so that what is left is resolved like any other path)."""
    if ";" not in text:
        return text
    kept = _PATH_PARAM.sub(lambda m: "" if drops(m[1]) else m[0], text)
    if kept != text:
        edits.whole("drop-params", "path", start, start + len(raw), text, kept)
    return kept


def merged(old: tuple[Edit, ...], new: tuple[Edit, ...]) -> tuple[Edit, ...]:
    """The twin's edits with the query rules' ones where the driver puts them: after the
    query's own edits, before the fragment's."""
    n = len(old)
    while n and old[n - 1].component == "fragment":
        n -= 1
    return old[:n] + new + old[n:]


__all__ = ["Recorder", "drop", "drop_empty", "merged", "name", "path_params", "sort"]
