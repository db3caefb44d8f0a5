"""The progress bar (cli/progress.py)."""

from __future__ import annotations

import io

from urlsan.cli.progress import Progress


def test_progress_draws_then_clears() -> None:
    err = io.StringIO()
    progress = Progress(err, size=1000, position=lambda: 250, enabled=True)
    progress.update(10)
    assert err.getvalue() == ""  # nothing in the first second: small inputs never show it
    progress.next = 0.0
    progress.update(12345)
    assert "[#######" in err.getvalue() and "25%" in err.getvalue()
    assert "12,345 lines" in err.getvalue()
    progress.close()
    assert err.getvalue().endswith("\r\x1b[K")
    off = io.StringIO()
    quiet = Progress(off, size=None, position=None, enabled=False)
    quiet.next = 0.0
    quiet.update(5)
    assert off.getvalue() == ""
