"""The scripts of examples/ run as a user runs them: a proxy script until the block ends."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .mitmdump import BIN, REPO
from .ports import free_port
from .process import Process, clean_env

# pytest is imported where it is used: bench/ imports this package outside of a test run.

EXAMPLES = REPO / "examples"


def example_env(**extra: str) -> dict[str, str]:
    """The environment an example runs in: this venv's bin/ first on PATH (``urlsan``,
    ``mitmdump``), no proxy variables."""
    env = clean_env(NO_PROXY="", no_proxy="")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def require_proxy() -> None:
    """Skip cleanly while the addon (or mitmproxy) is not there."""
    import pytest

    try:
        import urlsan.cli.proxy  # noqa: F401
    except ImportError as e:
        pytest.skip(f"urlsan proxy not available: {e}")
    pytest.importorskip("mitmproxy", reason="urlsan proxy needs mitmproxy")
    if shutil.which("bash") is None:
        pytest.skip("the proxy examples are bash scripts")


@contextmanager
def running(script: str, tmp: Path, *args: str, **env: str) -> Iterator[int]:
    """Run ``examples/script args`` (a proxy) on a free port until the block ends; yield the
    port.  The script's process group gets SIGINT at the end (mitmdump shuts down cleanly on
    ^C)."""
    import pytest

    require_proxy()
    port = free_port()
    argv = ["bash", str(EXAMPLES / script), *args]
    env_ = example_env(PORT=str(port), **env)
    with Process(
        argv, cwd=tmp, env=env_, stop_signal=signal.SIGINT, stop_timeout=15, group=True
    ) as proc:
        try:
            proc.wait_for_port(port, timeout=30)
        except RuntimeError:
            pytest.fail(f"{script} did not start:\n{proc.output()}")
        yield port
