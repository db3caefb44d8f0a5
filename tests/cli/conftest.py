from __future__ import annotations

import pytest
from cli_harness import RunUrlsan, make_runner


@pytest.fixture
def urlsan(monkeypatch: pytest.MonkeyPatch) -> RunUrlsan:
    return make_runner(monkeypatch)
