"""Run mypy on the checkout, whatever kind of editable install (or none) is in place.

pyproject.toml maps folders to packages (``core/`` is ``urlsan.core``), which mypy cannot read;
setuptools' default editable install serves that mapping through an import hook mypy cannot
follow either.  So this builds the installed shape once, as symlinks under ``build/typecheck``,
and points mypy at it: a file mypy reports is the checkout's own file.

    python tools/typecheck.py [mypy arguments]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"


def link_tree() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shutil.rmtree(TREE, ignore_errors=True)
    for package, folder in sorted(setuptools["package-dir"].items()):
        target = TREE.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in (ROOT / folder).iterdir():
            if source.suffix in (".py", ".pyi") or source.name == "py.typed":
                (target / source.name).symlink_to(source)


def main() -> int:
    link_tree()
    command = [sys.executable, "-m", "mypy", "-p", "urlsan", *sys.argv[1:]]
    return subprocess.call(command, cwd=ROOT, env={**os.environ, "MYPYPATH": str(TREE)})


if __name__ == "__main__":
    sys.exit(main())
