"""Figures of the hardening run, printed at the end: cases tried, requests sent, records checked."""

from __future__ import annotations

from typing import Any

from tests.hardening import support


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    if not support.FIGURES and not support.NOTES:
        return
    tr = terminalreporter
    tr.section("urlsan hardening figures")
    for name, value in sorted(support.FIGURES.items()):
        tr.write_line(f"{name:<60} {value:>10}")
    for note in support.NOTES:
        tr.write_line(note)
