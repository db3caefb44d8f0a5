"""The ``>>>`` examples in the docstrings of the library run as written: the API reference
shows them (docs/api), and a reader pastes them."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import urlsan.core

MODULES = ["urlsan.core"] + [
    f"urlsan.core.{m.name}" for m in pkgutil.iter_modules(urlsan.core.__path__) if m.name[0] != "_"
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    found = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert found.failed == 0, name
