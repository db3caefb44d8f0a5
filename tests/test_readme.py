"""README and the pages of docs/ are part of the product: their rule and finding tables must
match the code.  (Their `>>>` examples run as doctests, pyproject.toml; their console blocks in
tests/cli/test_docs.py; links, anchors and the site's nav in tests/docs/.)"""

from __future__ import annotations

import re
from pathlib import Path

from urlsan.core.findings import FINDING_NAMES
from urlsan.core.policy import PROFILES, RULES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
RULES_PAGE = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
FINDINGS_PAGE = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")


def rule_rows() -> dict[str, list[str]]:
    table = RULES_PAGE.split("<!-- generated: rules ")[1].split("<!-- end: rules -->")[0]
    rows = {}
    for line in table.splitlines():
        m = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if m:
            rows[m.group(1)] = [cell.strip() for cell in line.strip("|").split("|")]
    return rows


def test_rule_table_lists_every_rule_in_order() -> None:
    assert list(rule_rows()) == [r.name for r in RULES]


def test_rule_table_profiles_and_lossiness_match_the_code() -> None:
    rows = rule_rows()
    for rule in RULES:
        cells = rows[rule.name]
        profiles = dict(zip(("rfc3986", "rfc2396", "crawler", "strict"), cells[2:6], strict=True))
        for profile, mark in profiles.items():
            assert (mark == "on") == (rule.name in PROFILES[profile]), (rule.name, profile)
        assert cells[6] == ("yes" if rule.lossy else "no"), rule.name


def table_names(text: str) -> list[str]:
    """The names in the first column of a Markdown table's rows."""
    names = []
    for line in text.splitlines():
        if line.startswith("| `"):
            names += re.findall(r"`([a-z0-9-]+)`", line.split("|")[1])
    return names


def test_every_finding_is_documented_once_on_its_page() -> None:
    assert sorted(table_names(FINDINGS_PAGE)) == sorted(FINDING_NAMES)


def test_readme_findings_table_names_every_finding() -> None:
    section = README.split("\n### Findings\n", 1)[1].split("\n## ", 1)[0]
    assert sorted(table_names(section)) == sorted(FINDING_NAMES)
