"""Every `console` block of README.md and the pages of docs/, run as written: each `$ ` line is a
shell command and the lines up to the next one are what it prints (standard output and error,
as a terminal shows them).  The commands run in a scratch directory that has the checkout's
examples/ in it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.MULTILINE | re.DOTALL)
DOCS = [
    doc
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    if _BLOCK.search(doc.read_text(encoding="utf-8"))
]


def sessions(doc: Path) -> list[list[tuple[str, str]]]:
    """Each console block as its (command, expected output) pairs."""
    blocks = []
    for block in _BLOCK.findall(doc.read_text(encoding="utf-8")):
        pairs: list[tuple[str, str]] = []
        for line in block.splitlines(keepends=True):
            if line.startswith("$ "):
                pairs.append((line[2:].rstrip("\n"), ""))
            else:
                command, output = pairs[-1]
                pairs[-1] = (command, output + line)
        blocks.append(pairs)
    return blocks


@pytest.mark.skipif(shutil.which("bash") is None, reason="the examples are shell sessions")
@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_console_blocks(doc: Path, tmp_path: Path) -> None:
    """All blocks of a document in order, in one directory: later ones use earlier files."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["NO_COLOR"] = "1"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for block in sessions(doc):
        for command, expected in block:
            run = subprocess.run(
                ["bash", "-c", command],
                cwd=tmp_path,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=60,
            )
            assert run.stdout == expected, f"{doc.name}: $ {command}"


def test_docs_have_sessions() -> None:
    assert {"README.md", "cli.md"} <= {doc.name for doc in DOCS}
    assert sum(len(sessions(doc)) for doc in DOCS) >= 8
