from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.examples.shared import Origin


@pytest.fixture
def origin() -> Iterator[Origin]:
    with Origin() as site:
        yield site
