"""The output of each ``urlsan canon`` mode (`Mode`): one small formatter per mode, which
turns a line's result (or a bad line) into what is written for it."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

from ..core import Result, backends
from .terminal import Colors, shown


class Mode(Enum):
    """What is written for each line."""

    URL = "url"  # the canonical URL
    JSON = "json"  # Result.as_dict()
    DIFF = "diff"  # changed URLs: line number and rules, before and after
    CHECK = "check"  # offenders as FILE:LINE: rules: input -> canonical
    CHECK_JSON = "check-json"  # offenders as Result.as_dict() with their "line"
    CHECK_DIFF = "check-diff"  # offenders in the --diff form


def rules_of(r: Result) -> str:
    return ", ".join(dict.fromkeys(e.rule for e in r.edits))


def diverging(r: Result) -> list[str]:
    """What the servers named by ``--backends`` read otherwise (their findings' details)."""
    return [f.detail for f in r.findings if f.rule == backends.FINDING]


def offends(text: str, r: Result) -> bool:
    """--check: a line that is not canonical, or that a named server reads otherwise."""
    return r.url != text or bool(diverging(r))


class Format:
    """A mode's formatter; this one writes the canonical URLs (`Mode.URL`).  `line` returns the
    output of a valid line ('' for none), `bad` that of a bad line written through
    (--on-error pass)."""

    changes = False  # whether the mode needs to know if a line changed

    def __init__(self, sep: str, name: str, colors: Colors) -> None:
        self.sep, self.name, self.colors = sep, name, colors

    def counts(self, text: str, r: Result) -> bool:
        """Whether the line counts as changed (an offender, for --check)."""
        return r.url != text

    def line(self, number: int, text: str, r: Result) -> str:
        return r.url + self.sep

    def bad(self, number: int, text: str, reason: str) -> str | None:
        return text + self.sep


class _Json(Format):
    def line(self, number: int, text: str, r: Result) -> str:
        return json.dumps(r.as_dict(), ensure_ascii=False) + self.sep

    def bad(self, number: int, text: str, reason: str) -> str | None:
        shown_input = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        obj: dict[str, Any] = {
            "input": shown_input,
            "url": None,
            "edits": [],
            "findings": [],
            "error": reason,
        }
        return json.dumps(obj, ensure_ascii=False) + self.sep


class _Diff(Format):
    changes = True

    def line(self, number: int, text: str, r: Result) -> str:
        if r.url == text:
            return ""
        c = self.colors
        return (
            f"{c.head}{number}: {rules_of(r)}{c.reset}\n"
            f"{c.minus}- {shown(text)}{c.reset}\n"
            f"{c.plus}+ {shown(r.url)}{c.reset}\n"
        )

    def bad(self, number: int, text: str, reason: str) -> str | None:
        return None  # --diff and --check never print bad lines on stdout


class _Check(_Diff):
    def counts(self, text: str, r: Result) -> bool:
        return offends(text, r)

    def line(self, number: int, text: str, r: Result) -> str:
        servers = diverging(r)
        if r.url == text and not servers:
            return ""
        what = "; ".join(filter(None, [rules_of(r), *servers]))
        return f"{self.name}:{number}: {what}: {shown(text)} -> {shown(r.url)}\n"


class _CheckJson(_Diff):
    def counts(self, text: str, r: Result) -> bool:
        return offends(text, r)

    def line(self, number: int, text: str, r: Result) -> str:
        if not offends(text, r):
            return ""
        return json.dumps({"line": number, **r.as_dict()}, ensure_ascii=False) + "\n"


FORMATS: dict[Mode, type[Format]] = {
    Mode.URL: Format,
    Mode.JSON: _Json,
    Mode.DIFF: _Diff,
    Mode.CHECK: _Check,
    Mode.CHECK_JSON: _CheckJson,
    Mode.CHECK_DIFF: _Diff,
}
