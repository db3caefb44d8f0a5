"""canonical.py chooses between compiled twin, fast path and reference driver, and says which.

The driver is the reference the other two are held to (test_speedups.py): it must not know of
them, so that no call goes from the driver back to the module that chose it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import urlsan._about as about
import urlsan.core as core
from urlsan.core import canonical, compiled, driver

CORE = Path(driver.__file__).parent


def _imported(module: str) -> set[str]:
    tree = ast.parse((CORE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {a.name for a in node.names}
    return found


@pytest.mark.parametrize("module", ["driver", "rules", "findings", "split", "query", "policy"])
def test_the_reference_side_imports_none_of_the_accelerators(module: str) -> None:
    assert not _imported(module) & {"canonical", "compiled", "fastpath", "_speedups"}


def test_only_canonical_hands_the_twin_over() -> None:
    """compiled.py loads the twin; canonical.py alone hands it its tables and callbacks."""
    users = {p.stem for p in CORE.glob("*.py") if "compiled" in _imported(p.stem)}
    assert users == {"canonical"}


def test_twin_status_is_the_cores_to_say(monkeypatch: pytest.MonkeyPatch) -> None:
    assert core.twin_loaded() is (compiled.twin is not None)
    assert about.twin_loaded() is core.twin_loaded()
    assert about.engine() == core.engine()
    if compiled.twin is not None:
        assert core.engine() == f"compiled ({compiled.path})"
    monkeypatch.setattr(compiled, "twin", None)
    assert core.twin_loaded() is False and about.twin_loaded() is False
    monkeypatch.setenv("URLSAN_NO_EXTENSIONS", "1")
    assert core.engine() == "pure Python (URLSAN_NO_EXTENSIONS is set)"
    monkeypatch.delenv("URLSAN_NO_EXTENSIONS")
    assert core.engine().startswith("pure Python: the compiled twin")


def test_old_names_stay_importable() -> None:
    assert canonical.canonicalize is core.canonicalize
    assert canonical.canonicalize_python is driver.canonicalize_python
    assert canonical.canonicalize_authority is core.canonicalize_authority


def test_the_entry_is_the_python_function_without_the_twin() -> None:
    if compiled.entry is None:
        assert type(core.canonicalize).__name__ == "function"
        assert canonical.urls_in_c is None and canonical.columns_in_c is None
    else:
        assert core.canonicalize.__wrapped__.__module__ == "urlsan.core.canonical"  # type: ignore[attr-defined]
        assert canonical.urls_in_c is compiled.urls
