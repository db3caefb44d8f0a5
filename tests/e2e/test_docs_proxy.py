"""The Python snippets of docs/proxy.md, saved to a script file and run as a user runs them,
through a real ``urlsan proxy``.  Only what stands for the user's machine is replaced: the
proxy's port (8080 may be taken here) and the path of mitmproxy's CA.  ``example.com`` is
served by a local HTTPS origin (mitmproxy's ``map_remote``): CI has no internet."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import REPO, running_proxy, upstream_server

pytestmark = pytest.mark.e2e

_PYTHON = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SNIPPETS = _PYTHON.findall((REPO / "docs" / "proxy.md").read_text(encoding="utf-8"))


def _snippet(starting: str) -> str:
    (found,) = [s for s in SNIPPETS if s.startswith(starting)]
    return found


def test_the_requests_snippet(tmp_path: Path) -> None:
    with upstream_server(tmp_path) as origin:
        remote = f"|//example.com|//127.0.0.1:{origin.port}"
        options = ("--set", "ssl_insecure=true", "--set", "connection_strategy=lazy")
        with running_proxy(tmp_path, *options, "--map-remote", remote) as proxy:
            code = _snippet("import requests")
            code = code.replace("http://127.0.0.1:8080", proxy.url)
            code = code.replace('"/home/me/.mitmproxy/mitmproxy-ca-cert.pem"', repr(str(proxy.ca)))
            script = tmp_path / "client.py"
            script.write_text(code + "print('ok')\n")
            env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
            run = subprocess.run(
                [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
            )
            assert run.returncode == 0, run.stderr
            assert run.stdout == "ok\n"
        (received,) = origin.take()
    assert received.target == b"/a/c"  # /a/./b/../c as the origin received it through urlsan


def test_the_scrapy_settings_snippet(tmp_path: Path) -> None:
    """Saved as a project's settings.py and imported, it points Scrapy's HttpProxyMiddleware
    (which reads the environment) at the proxy, unless the environment already says where."""
    (tmp_path / "settings.py").write_text(_snippet("# settings.py"))
    code = "import os, settings; print(os.environ['http_proxy'], os.environ['https_proxy'])"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert run.stdout.split() == ["http://127.0.0.1:8080"] * 2, run.stderr
