"""Every shell block of README.md and docs/ runs as a reader pastes it (tests/docs/shell_blocks.py
says how: a fresh HOME, a network namespace of its own, servers started, checked and stopped),
unless it says why it cannot run here (``<!-- not run: reason -->`` on the line before it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .shell_blocks import DOCS, ROOT, blocks

RUNNABLE = [doc for doc in DOCS if any(b.not_run is None for b in blocks(doc))]


def _namespaces() -> str | None:
    """Why no network namespace can be made here, or None."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return "needs unshare and ip (util-linux, iproute2)"
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare -rn: {probe.stderr.strip()}"


def test_every_marked_block_says_why() -> None:
    marked = [b for doc in DOCS for b in blocks(doc) if b.not_run is not None]
    assert marked, "the pattern finds the markers"
    assert all(len(b.not_run or "") >= 10 for b in marked), [b.where for b in marked]


def test_the_pasted_commands_that_failed_before_are_runnable() -> None:
    """The lines a reader pastes first are run, not marked away."""
    runnable = {c for doc in DOCS for b in blocks(doc) if b.not_run is None for c in b.commands}
    assert any("certutil -d sql:$HOME/.pki/nssdb -N" in c for c in runnable)
    assert any(c.startswith("urlsan proxy") and "--mode reverse:" in c for c in runnable)
    assert "make run" in {c.split("#")[0].strip() for c in runnable}
    quick_start = [b for b in blocks(ROOT / "README.md") if b.prints is not None]
    assert quick_start and quick_start[0].commands[-1].startswith("tail -n1 urlsan-audit.jsonl")


@pytest.mark.skipif(_namespaces() is not None, reason=_namespaces() or "")
@pytest.mark.parametrize("doc", RUNNABLE, ids=lambda d: str(d.relative_to(ROOT)))
def test_shell_blocks_run(doc: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        ["unshare", "-rn", sys.executable, "-m", "tests.docs.shell_blocks", str(doc), tmp_path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    ran = run.stdout.count("\nok ") + run.stdout.startswith("ok ")
    assert ran == sum(len(b.commands) for b in blocks(doc) if b.not_run is None)
