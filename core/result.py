"""The immutable values `canonicalize` returns or raises.

`Edit`, `Finding` and `Result` are NamedTuples rather than frozen dataclasses: they are built on
the proxy's hot path, and a tuple is built in a third of the time while being just as immutable.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import taxonomy

# Edits one component keeps apart before the rest of its character rewrites fold into the last
# (issue #13): a megabyte of alternating hostile rewrites ("\x01%" * 2**19) is then a handful of
# edits, not a million objects, while every real target keeps one edit per run.  Handed to the
# compiled twin with its tables (`canonical.py`, the hand-over), so both fold at the same place.
FOLD_AFTER = 64
# Offsets a finding keeps of its occurrences (`Finding.offsets`): a megabyte of "../" is one
# finding with the first 16 offsets and a count, not 333,333 numbers.  Handed to the twin with
# its tables (`canonical.py`), as FOLD_AFTER is.
MAX_OFFSETS = 16


def rule_names(rule: str) -> tuple[str, ...]:
    """The rules an edit's ``rule`` names: one, or several joined by ``+`` for an edit that core
    folded (`Edit.rules`); also for a rule read back from a JSON record, where no `Edit` is."""
    return tuple(rule.split("+"))


class Edit(NamedTuple):
    """One rewrite: ``rule`` changed ``before`` into ``after`` in ``component``.

    ``start``/``end`` are offsets into the input (a ``bytes`` input counts in its
    ``decode("utf-8", "surrogateescape")`` form).  Character rules (escapes, case) cover exactly
    the characters they touched, and adjacent edits of one rule merge into one.  Structural rules
    (dot segments, ports, query order) cover the whole component, and ``before``/``after`` show
    the component as that rule saw and left it.

    A component's character rewrites after its first `FOLD_AFTER` edits fold into its last edit,
    adjacent or not: that edit then spans them all, untouched text between included in both
    ``before`` and ``after``, and ``rule`` names each rule it holds once, in pipeline order,
    joined by ``+`` (``encode-stray-percent+encode-unsafe``); `rules` splits them.
    """

    rule: str
    component: str
    start: int
    end: int
    before: str
    after: str

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules that made this edit: one, or several for a folded edit."""
        return rule_names(self.rule)

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


class Finding(NamedTuple):
    """A security-relevant fact about the input that is not a rewrite (README, Findings).

    One finding per rule and component: ``offset`` and ``detail`` describe the first occurrence,
    ``occurrences`` says how many there were, and ``offsets`` where the first `MAX_OFFSETS` of
    them are when there is more than one (``()`` for one: it is at ``offset``; `where` gives
    both alike).  `severity` and `weaknesses` come from `urlsan.core.taxonomy`, where each
    kind's are written down with their sources.
    """

    rule: str
    component: str
    offset: int
    detail: str = ""
    occurrences: int = 1
    offsets: tuple[int, ...] = ()

    @property
    def where(self) -> tuple[int, ...]:
        """The offsets of its occurrences, the first `MAX_OFFSETS` of them."""
        return self.offsets or (self.offset,)

    @property
    def severity(self) -> str:
        """``info``, ``low``, ``medium``, ``high`` or ``critical`` (`taxonomy.SEVERITIES`): the
        finding kind's, as its component and first occurrence tell (`taxonomy.severity`)."""
        return taxonomy.severity(self.rule, self.component, self.detail, self.occurrences)

    @property
    def weaknesses(self) -> tuple[str, ...]:
        """The CWE and CAPEC entries this finding points at ("CWE-22", "CAPEC-126")."""
        return taxonomy.weaknesses(self.rule)

    def as_dict(self) -> dict[str, Any]:
        """Its fields; ``offsets`` only when it occurred more than once (as a list)."""
        d = self._asdict()
        if d["offsets"]:
            d["offsets"] = list(d["offsets"])
        else:
            del d["offsets"]
        return d


class Result(NamedTuple):
    """The canonical ``url`` of ``input``, every rewrite that produced it, and the findings."""

    input: str
    """The URL or request-target as given (raw bytes decoded with ``surrogateescape``)."""
    url: str
    """Its canonical form under the policy."""
    edits: tuple[Edit, ...] = ()
    """Every rewrite, in the order the rules made them; offsets count in the text each rule saw."""
    findings: tuple[Finding, ...] = ()
    """Security-relevant facts about the input that are not rewrites."""

    @property
    def changed(self) -> bool:
        """Whether the canonical form differs from the input."""
        return self.url != self.input

    def as_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready data: lists of dicts for the edits and findings."""
        return {
            "input": self.input,
            "url": self.url,
            "edits": [e._asdict() for e in self.edits],
            "findings": [f.as_dict() for f in self.findings],
        }


class InvalidTarget(ValueError):
    """The input is not a valid URI-reference and the policy does not repair it.

    Raised only by strict policies and by the opt-in ``reject-escaped-slash``.  Carries the HTTP
    status a proxy should answer with, as h11's errors do.
    """

    status_hint = 400

    def __init__(self, rule: str, component: str, offset: int, message: str) -> None:
        super().__init__(f"{message} ({rule}, {component} at offset {offset})")
        self.rule = rule
        self.component = component
        self.offset = offset
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across --jobs worker processes
        return (type(self), (self.rule, self.component, self.offset, self.message))
