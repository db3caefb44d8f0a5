"""bench/guard.py, the instructions-per-URL guard .ci/run runs: it passes on the code its
baseline was measured on and fails on a seeded regression (a `canonicalize` made to do more)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "data"

# Imported by the measured process before anything else (PYTHONPATH): every canonicalize call
# also builds and drops a list, some thousand instructions a URL that the code does not need.
SLOWER = """
import urlsan.core
_fast = urlsan.core.canonicalize
def canonicalize(*args, **kwargs):
    [str(i) for i in range(40)]
    return _fast(*args, **kwargs)
urlsan.core.canonicalize = canonicalize
"""

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None or not (CORPUS / "ada-kasztp.txt").exists(),
    reason="needs valgrind and the real URL corpora beside the checkout",
)


def guard(
    baseline: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        str(ROOT / "bench" / "guard.py"),
        "--only",
        "clean",
        "--items",
        "200",
    ]
    return subprocess.run(
        [*command, "--baseline", str(baseline), "--corpus-dir", str(CORPUS), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )


def test_guard_fails_on_a_seeded_regression(tmp_path: Path) -> None:
    baseline = tmp_path / "guard.json"
    update = guard(baseline)
    assert update.returncode == 0, update.stderr  # no baseline yet: measured, not compared
    assert guard(baseline, "--update").returncode == 2  # a baseline moves with a reason only
    assert guard(baseline, "--update", "--reason", "the test's own").returncode == 0
    same = guard(baseline)
    assert same.returncode == 0, same.stdout + same.stderr
    seeded = tmp_path / "seeded"
    seeded.mkdir()
    (seeded / "sitecustomize.py").write_text(SLOWER)
    slower = guard(baseline, env={"PYTHONPATH": str(seeded)})
    assert slower.returncode == 1, slower.stdout + slower.stderr
    assert "clean grew more than 10%" in slower.stdout
