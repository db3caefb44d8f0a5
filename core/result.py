"""The immutable values `canonicalize` returns or raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Edit:
    """One rewrite: ``rule`` changed ``before`` into ``after`` in ``component``.

    ``start``/``end`` are offsets into the input (a ``bytes`` input counts in its
    ``decode("utf-8", "surrogateescape")`` form).  Character rules (escapes, case) cover exactly the
    characters they touched; structural rules (dot segments, ports, query order) cover the whole
    component, and ``before``/``after`` show the component as that rule saw and left it.
    """

    rule: str
    component: str
    start: int
    end: int
    before: str
    after: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "component": self.component,
            "start": self.start,
            "end": self.end,
            "before": self.before,
            "after": self.after,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """A security-relevant fact about the input that is not a rewrite (see docs/rules.md)."""

    rule: str
    component: str
    offset: int
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "component": self.component,
            "offset": self.offset,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Result:
    """The canonical ``url`` of ``input``, every rewrite that produced it, and the findings."""

    input: str
    url: str
    edits: tuple[Edit, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def changed(self) -> bool:
        return self.url != self.input

    def as_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "url": self.url,
            "edits": [e.as_dict() for e in self.edits],
            "findings": [f.as_dict() for f in self.findings],
        }


class InvalidTarget(ValueError):
    """The input is not a valid URI-reference and the policy does not repair it.

    Raised only by strict policies and by opt-in rejecting rules (``reject-escaped-slash``).
    Carries the HTTP status a proxy should answer with, as h11's errors do.
    """

    status_hint = 400

    def __init__(self, rule: str, component: str, offset: int, message: str) -> None:
        super().__init__(f"{message} ({rule}, {component} at offset {offset})")
        self.rule = rule
        self.component = component
        self.offset = offset
        self.message = message
