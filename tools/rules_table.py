"""Write the rules table of docs/rules.md from the rule declarations (core/pipeline.py).

    python tools/rules_table.py          # rewrite the table between its marker comments
    python tools/rules_table.py --check  # exit 1 if the committed table is not the generated one

tests/test_layout.py holds the committed table to `urlsan.cli.rules.markdown_table`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from urlsan.cli.rules import TABLE_END, TABLE_START, markdown_table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def with_table(text: str) -> str:
    """``text`` with the generated table between its marker comments."""
    before, rest = text.split(TABLE_START + "\n", 1)
    after = rest.split(TABLE_END, 1)[1]
    return f"{before}{TABLE_START}\n{markdown_table()}{TABLE_END}{after}"


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    new = with_table(text)
    if argv[1:] == ["--check"]:
        return int(new != text)
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
