"""The two parts of the suite are what docs/development.md and README say, and CI runs both."""

from __future__ import annotations

import re

from ..conftest import SLOW
from .shell_blocks import ROOT


def test_every_slow_entry_names_tests_that_exist() -> None:
    """A renamed file or test would leave the slow part silently in `make test`."""
    for entry in SLOW:
        path, _, name = entry.partition("::")
        assert (ROOT / path).exists(), entry
        if name:
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.MULTILINE), entry


def test_make_test_and_make_check_split_the_suite() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r'^pytest: .*\n\t.* -m "not slow"', makefile, re.MULTILINE)
    assert re.search(r"^pytest-slow: .*\n\t.* -m slow", makefile, re.MULTILINE)
    assert re.search(r"^check: pytest-slow$", makefile, re.MULTILINE)
    assert re.search(r"^test: lint typecheck pytest$", makefile, re.MULTILINE)


def test_ci_runs_both_parts_on_each_python() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test\b", run, re.MULTILINE), "README's test command"
    assert re.search(r"^make check\b", run, re.MULTILINE)
    assert re.search(r"make pytest pytest-slow PYTHON=", run)


def test_the_docs_name_both_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    development = (ROOT / "docs" / "development.md").read_text()
    assert re.search(r"^make test +#", readme, re.MULTILINE)
    assert re.search(r"^make test +#", development, re.MULTILINE)
    assert re.search(r"^make check +#", development, re.MULTILINE)
