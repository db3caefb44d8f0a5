"""Each finding's severity and the weaknesses it points at, as data.

The weaknesses are MITRE's: CWE (https://cwe.mitre.org/data/definitions/<id>.html) and CAPEC
(https://capec.mitre.org/data/definitions/<id>.html); ``SOURCES`` holds those addresses.  A
finding's severity is its kind's, raised or lowered where its component or detail says more
(``Kind.by_component``, ``Kind.by_detail``): a ``./`` segment is noise, a ``..`` that climbs
above the root after a second decode is an attack.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

# Lowest first: `rank` orders them.
SEVERITIES: tuple[str, ...] = ("info", "low", "medium", "high", "critical")

SOURCES = MappingProxyType(
    {
        "CWE": "https://cwe.mitre.org/data/definitions/{}.html",
        "CAPEC": "https://capec.mitre.org/data/definitions/{}.html",
    }
)


class Kind(NamedTuple):
    """One finding kind: its severity, the weaknesses it names, and what it flags."""

    severity: str
    weaknesses: tuple[str, ...]  # "CWE-22", "CAPEC-126"
    by_component: tuple[tuple[str, str], ...] = ()  # (component, severity) overrides
    by_detail: tuple[tuple[str, str], ...] = ()  # (detail, severity) overrides
    # The reader an encoding of this kind exists to hide a character from: a target with it
    # and no climb is a medium one at most (`urlsan.core.severity`); "" for any other kind.
    hides: str = ""


_E = MappingProxyType  # read-only tables

KINDS = _E(
    {
        "dot-segment": Kind("low", ("CWE-22", "CAPEC-126"), by_detail=((".", "info"),)),
        "encoded-dot-segment": Kind(
            "medium",
            ("CWE-22", "CWE-172", "CAPEC-126", "CAPEC-72"),
            hides="a rule matching the target as sent",
        ),
        "dot-segment-above-root": Kind("high", ("CWE-22", "CAPEC-126")),
        "decoded-dot-segment-above-root": Kind(
            "critical", ("CWE-22", "CWE-174", "CAPEC-126", "CAPEC-120", "CAPEC-80")
        ),
        "path-parameter-dotdot": Kind("high", ("CWE-22", "CAPEC-126")),
        "escaped-dot": Kind(
            "medium", ("CWE-172", "CWE-646", "CAPEC-72"), hides="a rule matching the target as sent"
        ),
        "escaped-slash": Kind("medium", ("CWE-22", "CWE-172", "CAPEC-64")),
        "backslash": Kind("low", ("CWE-22", "CAPEC-64")),
        "double-encoding": Kind(
            "medium",
            ("CWE-174", "CAPEC-120"),
            by_component=(("query", "low"),),
            hides="a second decode",
        ),
        "percent-u": Kind("medium", ("CWE-172", "CWE-176", "CAPEC-71"), hides="IIS's %u decoding"),
        "nul-escape": Kind("high", ("CWE-158", "CAPEC-52"), hides="a C string"),
        "crlf-escape": Kind(
            "high",
            ("CWE-93", "CWE-113", "CAPEC-34"),
            by_component=(("query", "low"), ("fragment", "low")),
        ),
        "overlong-utf8": Kind("high", ("CWE-176", "CAPEC-80"), hides="a lenient UTF-8 decoder"),
        "invalid-utf8": Kind(
            "medium", ("CWE-176", "CAPEC-80"), by_component=(("query", "low"), ("fragment", "low"))
        ),
        "stray-percent": Kind("low", ("CWE-172",)),
        "raw-space": Kind("low", ("CWE-20",)),
        "control-char": Kind("medium", ("CWE-150", "CWE-93")),
        # Trojan Source (CVE-2021-42574): text reordered or hidden from a person
        "format-char": Kind("medium", ("CWE-176", "CWE-451"), hides="a person reading the URL"),
        "nfkc-separator": Kind(
            "medium", ("CWE-176", "CWE-180", "CAPEC-71"), hides="a reader that does not apply NFKC"
        ),
        "numeric-host": Kind(
            "medium", ("CWE-1289",), hides="a host rule matching the name as sent"
        ),
        # a host behind "user:pass@" that a person takes for the host
        "userinfo": Kind(
            "low",
            ("CWE-522",),
            by_detail=(("password", "medium"),),
            hides="a person reading the host",
        ),
        "invalid-idn": Kind("low", ("CWE-1007", "CAPEC-632")),
        "invalid-port": Kind("medium", ("CWE-20",)),
        "invalid-ip-literal": Kind("medium", ("CWE-20",)),
        # Reported by the proxy's decision, not core's detectors (urlsan.core.backends)
        "backend-divergence": Kind("high", ("CWE-436", "CAPEC-33")),
    }
)

_UNKNOWN = Kind("low", ())  # a kind this version does not know (a newer log)


def kind(rule: str) -> Kind:
    """The `Kind` of finding ``rule``; a kind this version does not know is ``low``, with no
    weaknesses (a log written by a newer urlsan)."""
    return KINDS.get(rule, _UNKNOWN)


def severity(rule: str, component: str = "", detail: str = "", occurrences: int = 1) -> str:
    """The severity of a finding ``rule`` in ``component`` whose first occurrence is ``detail``,
    of ``occurrences``: a detail that lowers the kind's severity speaks for the finding only when
    it is its one occurrence (a "." then a ".." are one dot-segment finding)."""
    k = KINDS.get(rule, _UNKNOWN)
    for value, sev in k.by_detail:
        if value == detail and (occurrences == 1 or rank(sev) > rank(k.severity)):
            return sev
    for value, sev in k.by_component:
        if value == component:
            return sev
    return k.severity


def rank(sev: object) -> int:
    """0 (info) to 4 (critical); -1 for anything else."""
    return SEVERITIES.index(sev) if sev in SEVERITIES else -1


def weaknesses(rule: str) -> tuple[str, ...]:
    """The CWE and CAPEC ids finding ``rule`` points at ("CWE-22", "CAPEC-126")."""
    return KINDS.get(rule, _UNKNOWN).weaknesses


def source(weakness: str) -> str:
    """The address that defines ``weakness`` ("CWE-22"), or "" for an id of no known catalogue."""
    catalogue, _, number = weakness.partition("-")
    template = SOURCES.get(catalogue)
    return template.format(number) if template and number.isdigit() else ""
