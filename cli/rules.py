"""`urlsan rules`: the rule table, with each rule's RFC section, the profiles it is on in, and
what it does; and the same table in Markdown, for docs/rules.md (`markdown_table`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core import RULES, Policy
from ..core.policy import PROFILES
from ..core.taxonomy import KINDS, Kind, source
from .status import EXIT_OK


def add_parser(sub: Any) -> None:
    rules = sub.add_parser(
        "rules", help="list the rules: what each does, its RFC section and profiles"
    )
    rules.add_argument("--json", action="store_true", help="as JSON")
    rules.set_defaults(func=cmd_rules)


def _profiles() -> dict[str, frozenset[str]]:
    return {p: Policy.profile(p).rules for p in PROFILES}


def cmd_rules(args: argparse.Namespace) -> int:
    profiles = _profiles()
    rows: list[dict[str, Any]] = [
        {
            "name": rule.name,
            "section": rule.section,
            "lossy": rule.lossy,
            "profiles": [p for p in PROFILES if rule.name in profiles[p]],
            "summary": rule.plain,
        }
        for rule in RULES
    ]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    width = max(len(r.name) for r in RULES)
    sections = max(len(r.section) for r in RULES)
    head = (
        f"{'rule':<{width}}  lossy  {' '.join(f'{p:<7}' for p in PROFILES)}  "
        f"{'section':<{sections}}  what it does"
    )
    print(head)
    for row in rows:
        marks = " ".join(f"{'on' if p in row['profiles'] else '-':<7}" for p in PROFILES)
        print(
            f"{row['name']:<{width}}  {'yes' if row['lossy'] else 'no':<5}  {marks}  "
            f"{row['section']:<{sections}}  {row['summary']}"
        )
    return EXIT_OK


def markdown_table() -> str:
    """The rules table of docs/rules.md (tools/doc_tables.py writes it between its marker
    comments): what ``urlsan rules`` prints, with the summaries' code marks.  A "|" is written
    as its character reference, which a Markdown table does not take for a cell's end."""
    profiles = _profiles()
    lines = [
        f"| rule | licensed by | {' | '.join(PROFILES)} | lossy | what it does |",
        "|---" * (len(PROFILES) + 4) + "|",
    ]
    for rule in RULES:
        marks = " | ".join("on" if rule.name in profiles[p] else "·" for p in PROFILES)
        cells = (rule.section, marks, "yes" if rule.lossy else "no", rule.summary)
        lines.append(f"| `{rule.name}` | " + " | ".join(cells).replace("`|`", "`&#124;`") + " |")
    return "\n".join(lines) + "\n"


def findings_table() -> str:
    """The findings table of docs/findings.md (tools/doc_tables.py writes it): each kind of
    `urlsan.core.taxonomy.KINDS` with what it flags, its severity and the weaknesses it names."""
    lines = ["| finding | what it flags | severity | weaknesses |", "|---|---|---|---|"]
    for name, kind in KINDS.items():
        links = ", ".join(f"[{w}]({source(w)})" for w in kind.weaknesses)
        cells = (kind.flags, _severity_cell(kind), links)
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _severity_cell(kind: Kind) -> str:
    """``medium`` and its exceptions: "`low` (`info` for `.`)", "`high` (`low` in the query)"."""
    but = [f"`{sev}` for `{detail}`" for detail, sev in kind.by_detail]
    but += [f"`{sev}` in the {component}" for component, sev in kind.by_component]
    return f"`{kind.severity}`" + (f" ({', '.join(but)})" if but else "")
