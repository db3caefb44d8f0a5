"""`urlsan report`: one pass over audit logs (`urlsan.audit.summary`), then the summary as a
terminal table (`urlsan.audit.tables`), JSON (`Summary.as_dict`), or one self-contained HTML
page with inline SVG charts (`urlsan.audit.page`)."""

from __future__ import annotations

from .page import render_html
from .summary import SUSPICIOUS, Kind, Summary, Tally
from .tables import render_text

__all__ = ["SUSPICIOUS", "Kind", "Summary", "Tally", "render_html", "render_text"]
