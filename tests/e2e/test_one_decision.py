"""End to end, one decision: a real mitmdump with the addon writes its audit log while a recorder
in front of it saves each request as it came; ``urlsan audit`` of that recording must write the
same records, in every mode."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.harness import (
    REPO,
    Mitmdump,
    exchange,
    mitmdump_command,
    upstream_server,
    urlsan_command,
)

pytestmark = pytest.mark.e2e

# A mitmproxy script run before the addon (``-s`` order): it keeps every request untouched and
# saves it with its response once that comes (the record holds the response's status).
RECORDER = """
from mitmproxy.io import FlowWriter


class Recorder:
    def __init__(self):
        self.file = open({path!r}, "wb")
        self.writer = FlowWriter(self.file)
        self.waiting = {{}}

    def requestheaders(self, flow):
        self.waiting[flow.id] = flow.copy()

    def responseheaders(self, flow):
        saved = self.waiting.pop(flow.id)
        saved.response = flow.response.copy()
        self.save(saved)

    def error(self, flow):
        self.save(self.waiting.pop(flow.id))

    def save(self, flow):
        self.writer.add(flow)
        self.file.flush()

    def done(self):
        for flow in self.waiting.values():
            self.writer.add(flow)
        self.file.close()


addons = [Recorder()]
"""

SIGNED = b"?X-Amz-Credential=k%2F1&X-Amz-Signature=abc"
TARGETS = [
    b"/index.html",
    b"/a/./b/../c?x=%7e",
    b"/%7Euser/caf\xc3\xa9/\xff",
    b"/x/..//y",
    b"/a%2fb/%2e%2e/c",
    b"/a/%2e%2e/b%7e%20c",
    b"/p?a=1&b={x}|y^z",
    b"/a%zz/%252e%252e/",
    b"/bucket/%7ekey" + SIGNED,
    b"/" + b"a" * 70_000,  # over urlsan_max_target: never canonicalized
]


def _records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text("ascii").splitlines() if path.exists() else []
    return [{k: v for k, v in json.loads(line).items() if k != "ts"} for line in lines]


@pytest.mark.parametrize(
    "mode, profile",
    [("rewrite", "rfc3986"), ("audit", "rfc3986"), ("reject", "strict"), ("redirect", "crawler")],
)
def test_live_proxy_and_urlsan_audit_agree(tmp_path: Path, mode: str, profile: str) -> None:
    recording, log, audited = tmp_path / "flows", tmp_path / "proxy.jsonl", tmp_path / "a.jsonl"
    recorder = tmp_path / "recorder.py"
    recorder.write_text(RECORDER.format(path=str(recording)))
    with upstream_server() as upstream:
        argv = mitmdump_command(
            "-s", str(recorder), "-s", str(REPO / "addon" / "script.py"),
            "--listen-host", "127.0.0.1", "-p", "0",
            "--mode", f"reverse:http://127.0.0.1:{upstream.port}",
            "--set", f"confdir={tmp_path / 'confdir'}",
            "--set", f"urlsan_log={log}",
            "--set", f"urlsan_mode={mode}",
            "--set", f"urlsan_profile={profile}",
        )  # fmt: skip
        with Mitmdump(argv, log=log) as proxy:
            for target in TARGETS:
                request = b"GET " + target + b" HTTP/1.1\r\nHost: Example.COM:80\r\n"
                response = exchange(proxy.port, request + b"Connection: close\r\n\r\n")
                assert response.startswith(b"HTTP/1.1 "), response[:200]
    run = subprocess.run(
        [*urlsan_command(), "audit", "-q", "--mode", mode, "--profile", profile,
         "-o", str(audited), str(recording)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    proxy_records, audit_records = _records(log), _records(audited)
    assert len(proxy_records) == len(TARGETS) - 1  # the clean target leaves none
    # Each with its response's status: the upstream's, or urlsan's own 308, 400 or 414.
    assert {r["status"] for r in proxy_records} <= {200, 308, 400, 414}
    assert proxy_records == audit_records
