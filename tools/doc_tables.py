"""Write the tables of the documentation that are derived from the code, between their marker
comments (``<!-- generated: NAME -->`` ... ``<!-- end: NAME -->``):

    python tools/doc_tables.py          # rewrite them
    python tools/doc_tables.py --check  # exit 1, naming the files, if one differs

tests/cli/test_doc_tables.py runs the check, so a new option or rule is documented when it is
declared.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from urlsan.addon.options import AUDIT, CANON, flags_table, proxy_table
from urlsan.cli.proxy import DEFAULT_LOG
from urlsan.cli.rules import findings_table, markdown_table

ROOT = Path(__file__).resolve().parents[1]

# The cell of urlsan_log's default: urlsan proxy names a log, the addon alone keeps none.
_LOG_README = (("log", f"`{DEFAULT_LOG}`"),)
_LOG_DOCS = (("log", f"`{DEFAULT_LOG}` with `urlsan proxy`; *(empty: none)* with mitmdump's `-s`"),)

# (file, block name): what goes between its markers.
BLOCKS: dict[tuple[str, str], Callable[[], str]] = {
    ("README.md", "proxy-options"): lambda: proxy_table(brief=True, defaults=_LOG_README),
    ("docs/proxy.md", "proxy-options"): lambda: proxy_table(defaults=_LOG_DOCS),
    ("docs/cli.md", "audit-options"): lambda: flags_table(AUDIT),
    ("docs/cli.md", "canon-options"): lambda: flags_table(CANON),
    ("docs/rules.md", "rules"): markdown_table,  # from the rule declarations, core/pipeline.py
    ("docs/findings.md", "findings"): findings_table,  # from the finding kinds, core/taxonomy.py
}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {re.escape(name)} [^>]*-->\n)(.*?)(<!-- end: {re.escape(name)} -->)",
        re.DOTALL,
    )


def rendered(path: str, text: str) -> str:
    """``text`` (of the file ``path``) with each of its generated blocks written anew."""
    for (file, name), make in BLOCKS.items():
        if file != path:
            continue
        found = _block(name).search(text)
        if found is None:
            raise ValueError(f"{path}: no <!-- generated: {name} ... --> block")
        text = text[: found.start(2)] + make() + text[found.end(2) :]
    return text


def main(argv: list[str]) -> int:
    stale = []
    for path in sorted({file for file, _ in BLOCKS}):
        target = ROOT / path
        text = target.read_text(encoding="utf-8")
        new = rendered(path, text)
        if new != text:
            stale.append(path)
            if "--check" not in argv:
                target.write_text(new, encoding="utf-8")
    if stale and "--check" in argv:
        print(f"not generated from the code: {', '.join(stale)} (python tools/doc_tables.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
