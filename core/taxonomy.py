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
    # What it flags, as the findings table of the documentation says it (Markdown).
    flags: str = ""
    # Targets that carry it: each twin finds it in each (tests/core/test_taxonomy.py).
    examples: tuple[str, ...] = ()


_E = MappingProxyType  # read-only tables

KINDS = _E(
    {
        "dot-segment": Kind(
            "low",
            ("CWE-22", "CAPEC-126"),
            by_detail=((".", "info"),),
            flags="`.` or `..` segments, separated by `/` or `\\`",
            examples=("http://h/a/./b/../c",),
        ),
        "encoded-dot-segment": Kind(
            "medium",
            ("CWE-22", "CWE-172", "CAPEC-126", "CAPEC-72"),
            hides="a rule matching the target as sent",
            flags="the same with an escaped dot: `%2e`, `.%2E`",
            examples=("http://h/a/%2e%2E/b",),
        ),
        "dot-segment-above-root": Kind(
            "high",
            ("CWE-22", "CAPEC-126"),
            flags="a `..` that climbs above `/` (traversal attempt)",
            examples=("http://h/../etc/passwd",),
        ),
        "decoded-dot-segment-above-root": Kind(
            "critical",
            ("CWE-22", "CWE-174", "CAPEC-126", "CAPEC-120", "CAPEC-80"),
            flags=(
                "a `..` that climbs above `/` once the path is decoded again the way a backend "
                "behind the proxy may: a second decode (`%252e%252e`, `%%32%65`), a lax UTF-8 "
                "decoder (`%c0%ae`, `%c0%2e`), IIS's `%u002e`, `%2F` and `%5C` as separators; the"
                " detail is the decoded path"
            ),
            examples=(
                "http://h/%252e%252e/etc/passwd",
                "http://h/%c0%ae%c0%ae/x",
            ),
        ),
        "path-parameter-dotdot": Kind(
            "high",
            ("CWE-22", "CAPEC-126"),
            flags="`..;x`: servlet containers strip `;` parameters after splitting",
            examples=("http://h/a/..;x/b",),
        ),
        "escaped-dot": Kind(
            "medium",
            ("CWE-172", "CWE-646", "CAPEC-72"),
            hides="a rule matching the target as sent",
            flags=(
                "`%2E` inside a segment that is no dot segment (`index%2Epdf`, `%2e%68taccess`): "
                "the escape hides an extension or a dot file from a filter on the raw target"
            ),
            examples=("http://h/index%2Epdf",),
        ),
        "escaped-slash": Kind(
            "medium",
            ("CWE-22", "CWE-172", "CAPEC-64"),
            flags="`%2F`/`%5C` in the path",
            examples=("http://h/a%2Fb",),
        ),
        "backslash": Kind(
            "low",
            ("CWE-22", "CAPEC-64"),
            flags="a raw `\\` in the path (IIS and WHATWG parsers read it as `/`)",
            examples=("http://h/a\\b",),
        ),
        "double-encoding": Kind(
            "medium",
            ("CWE-174", "CAPEC-120"),
            by_component=(("query", "low"),),
            hides="a second decode",
            flags=(
                "an escape that one decode makes: `%25` and two hex digits (`%252e`), or a stray "
                "`%` or `%25` followed by escaped hex digits (`%%32%65`, `%25%32%65`)"
            ),
            examples=("http://h/%252e",),
        ),
        "percent-u": Kind(
            "medium",
            ("CWE-172", "CWE-176", "CAPEC-71"),
            hides="IIS's %u decoding",
            flags="IIS's `%uXXXX`",
            examples=("http://h/%u002e",),
        ),
        "nul-escape": Kind(
            "high",
            ("CWE-158", "CAPEC-52"),
            hides="a C string",
            flags="`%00`",
            examples=("http://h/a%00.png",),
        ),
        "crlf-escape": Kind(
            "high",
            ("CWE-93", "CWE-113", "CAPEC-34"),
            by_component=(("query", "low"), ("fragment", "low")),
            flags="`%0D`, `%0A`",
            examples=("http://h/a%0d%0aSet-Cookie:x",),
        ),
        "overlong-utf8": Kind(
            "high",
            ("CWE-176", "CAPEC-80"),
            hides="a lenient UTF-8 decoder",
            flags=(
                "escaped bytes that a lax UTF-8 decoder reads as ASCII: a `C0` or `C1` lead "
                "(`%C0%AE`, `%c0%2e`, a bare `%c0`), `E0 80`-`9F`, `F0 80`-`8F`; also as raw "
                "bytes"
            ),
            examples=("http://h/%c0%ae",),
        ),
        "invalid-utf8": Kind(
            "medium",
            ("CWE-176", "CAPEC-80"),
            by_component=(("query", "low"), ("fragment", "low")),
            flags=(
                "any other escaped byte sequence that is no UTF-8 (`%FF`, a lone `%80`, a cut "
                "sequence), or a raw byte that is none"
            ),
            examples=("http://h/%ff",),
        ),
        "stray-percent": Kind(
            "low",
            ("CWE-172",),
            flags="a `%` that starts no escape (RFC 3986 §2.4): each decoder guesses differently",
            examples=("http://h/100%",),
        ),
        "raw-space": Kind("low", ("CWE-20",), flags="a raw space", examples=("http://h/a b",)),
        "control-char": Kind(
            "medium",
            ("CWE-150", "CWE-93"),
            flags="a raw control character (U+0000-U+001F, U+007F-U+009F)",
            examples=("http://h/a\x01b",),
        ),
        # Trojan Source (CVE-2021-42574): text reordered or hidden from a person
        "format-char": Kind(
            "medium",
            ("CWE-176", "CWE-451"),
            hides="a person reading the URL",
            flags=(
                "a bidirectional or invisible format character, raw or escaped as UTF-8 "
                "(`U+202E`, `%E2%80%8B`); other non-ASCII text (`café`) is no finding"
            ),
            examples=("http://h/a\u202eb",),
        ),
        "nfkc-separator": Kind(
            "medium",
            ("CWE-176", "CWE-180", "CAPEC-71"),
            hides="a reader that does not apply NFKC",
            flags=(
                "in the path, a character that Unicode compatibility normalization (NFKC) turns "
                "into `/`, `\\` or `%` (`／`, `＼`, `％`), or a segment it turns into `.` or `..` "
                "(`．．`, `%EF%BC%8E%EF%BC%8E`, `‥;x`), raw or escaped as UTF-8: a server that "
                "normalizes after decoding reads `/．．/` as `/../`; a `…` inside a longer segment "
                "is no finding"
            ),
            examples=("http://h/\uff0e\uff0e/x",),
        ),
        "numeric-host": Kind(
            "medium",
            ("CWE-1289",),
            hides="a host rule matching the name as sent",
            flags="`0x7f.1`, `0177.0.0.1`, `2130706433`, `127.1`",
            examples=("http://0x7f.1/",),
        ),
        # a host behind "user:pass@" that a person takes for the host
        "userinfo": Kind(
            "low",
            ("CWE-522",),
            by_detail=(("password", "medium"),),
            hides="a person reading the host",
            flags="credentials in a URL",
            examples=("http://user:pass@h/",),
        ),
        "invalid-idn": Kind(
            "low",
            ("CWE-1007", "CAPEC-632"),
            flags="a non-ASCII host that is no valid IDN (it is percent-encoded instead)",
            examples=("http://-\u00e9.example/",),
        ),
        "invalid-port": Kind(
            "medium",
            ("CWE-20",),
            flags=(
                "a port that is no number (`http://a:-1/`): it stays in the host, colon escaped, "
                "so the authority splits where it did"
            ),
            examples=("http://a:-1/",),
        ),
        "invalid-ip-literal": Kind(
            "medium",
            ("CWE-20",),
            flags=(
                "a `[` that opens no valid IP-literal (`http://[::1/`): all of it is host, escaped"
            ),
            examples=("http://[::1/",),
        ),
        # Reported by the proxy's decision, not core's detectors (urlsan.core.backends)
        "backend-divergence": Kind(
            "high",
            ("CWE-436", "CAPEC-33"),
            flags=(
                "a server named in `urlsan_backends` would route the target on another path than "
                "RFC 3986 reads in its canonical form ([Backends](backends.md)); reported by the "
                "proxy's decision, not by `canonicalize`"
            ),
        ),
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
