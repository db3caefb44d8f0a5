"""README is part of the product: its rule and finding tables must match the code."""

from __future__ import annotations

import re
from pathlib import Path

from urlsan.core.findings import FINDING_NAMES
from urlsan.core.policy import PROFILES, RULES

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def rule_rows() -> dict[str, list[str]]:
    table = README.split("<!-- rules-table -->")[1].split("<!-- /rules-table -->")[0]
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


def test_every_finding_is_documented() -> None:
    missing = [name for name in FINDING_NAMES if f"`{name}`" not in README]
    assert not missing
