"""Redaction: secrets in logged targets and edits are masked before a record is written.

The values of query parameters named in the redact list (any case, after %-decoding) and the
password of a userinfo (RFC 3986 §3.2.1, deprecated there and always masked) become `MASK`.
It works on the logged text only; it never decides what is sent upstream.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

MASK = "***"

# Query parameters whose values are secrets (compared case-insensitively, after %-decoding).
DEFAULT_REDACT: tuple[str, ...] = (
    "password",
    "passwd",
    "pass",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "api_key",
    "apikey",
    "key",
    "secret",
    "client_secret",
    "session",
    "sid",
    "sig",
    "signature",
    "auth",
    "code",
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "X-Goog-Signature",
    "X-Goog-Credential",
    "Key-Pair-Id",
)

# A query parameter: name up to "=", value up to the next separator.  Used on the logged text
# only, to find values to mask; it never decides what is sent upstream.
_PARAM = re.compile(r"(?:(?<=[?&;])|^)(?P<name>[^=&;#?]+)=(?P<value>[^&;#]*)")
# A parameter name with a "%" in it (or a parameter without a value): the names must then be
# %-decoded before they are compared; a "%" in values only, as in most queries, needs no decoding.
_ESCAPED_NAME = re.compile(r"[?&;][^=&;#?]*%")
# RFC 3986 §3.2.1: "user:password@" — the password is masked whatever the redact list says.
_USERINFO = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@:]*):(?P<pw>[^/?#@]*)@")


class Redactor:
    """Masks the values of ``names`` (any case) in logged targets and edits."""

    __slots__ = ("_hint", "names")

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        # Any of the names anywhere, in one scan: the pre-check of `_may_hold_secret`.
        self._hint = re.compile("|".join(sorted(map(re.escape, names)))) if names else None

    def _may_hold_secret(self, text: str) -> bool:
        """False when ``text`` certainly has nothing to mask: the fast path of nearly every record.

        A secret is a userinfo password (after ``:``, before ``@``) or a parameter's value (after
        ``=``, in a query: after ``?``); most logged targets have neither character, and most
        queries none of the names (one regex scan; `spans` itself when a name may be %-encoded).
        """
        if "@" in text:
            return True  # userinfo
        query_at = text.find("?")
        if query_at < 0 or "=" not in text or self._hint is None:
            return False
        query = text[query_at:]
        if "%" in query and _ESCAPED_NAME.search(query):
            return bool(self.spans(text))  # names are compared %-decoded
        return self._hint.search(query.lower()) is not None

    @classmethod
    def of(cls, names: Iterable[str]) -> Redactor:
        return cls(frozenset(n.strip().lower() for n in names if n.strip()))

    def _secret(self, name: str) -> bool:
        # unquote gives back a name without "%" as it is: the call only for an escaped one
        return (urllib.parse.unquote(name) if "%" in name else name).lower() in self.names

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Offsets of every secret in ``text``: masked parameter values and userinfo passwords."""
        query_at = text.find("?")
        found = []
        if query_at >= 0:
            for m in _PARAM.finditer(text, query_at + 1):
                if self._secret(m.group("name")) and m.group("value"):
                    found.append(m.span("value"))
        userinfo = _USERINFO.match(text)
        if userinfo:
            found.append(userinfo.span("pw"))
        return found

    def text(self, text: str, *, is_query: bool = False) -> str:
        """``text`` (a target, or a bare query when ``is_query``) with every secret masked."""
        if "=" not in text and "@" not in text:
            return text  # no parameter value, no userinfo: nothing `spans` could find
        if is_query:
            return self.text("?" + text)[1:]
        spans = self.spans(text)
        for start, end in sorted(spans, reverse=True):
            text = text[:start] + MASK + text[end:]
        return text

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        """An audit ``record`` with secrets masked in targets and edits (a copy if any)."""
        before, after = record.get("before") or "", record.get("after")
        # Most targets have no query (RFC 3986 §3.4) and no userinfo (§3.2.1), where a secret
        # would be: `_may_hold_secret`'s first test, in line, without its two calls.
        if (
            "?" not in before
            and "@" not in before
            and not (after and ("?" in after or "@" in after))
        ):
            return record
        if not self._may_hold_secret(before) and not (after and self._may_hold_secret(after)):
            return record  # edits only ever show parts of before and after
        secret_spans = self.spans(before)
        out = dict(record)
        out["before"] = self.text(before)
        out["after"] = None if after is None else self.text(after)
        edits = []
        for edit in record.get("edits", ()):
            edit = dict(edit)
            component = edit.get("component")
            if component == "userinfo":
                edit["before"] = edit["after"] = MASK
            elif component == "query":
                overlaps = any(
                    edit["start"] < end and start < edit["end"] for start, end in secret_spans
                )
                if overlaps and "=" not in edit["before"]:
                    # A character edit inside a secret value: the characters are the secret.
                    edit["before"] = edit["after"] = MASK
                else:
                    # A structural edit shows the whole query: mask it like a target.
                    edit["before"] = self.text(edit["before"], is_query=True)
                    edit["after"] = self.text(edit["after"], is_query=True)
            edits.append(edit)
        out["edits"] = edits
        return out
