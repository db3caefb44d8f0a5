"""End to end, one decision: a real mitmdump with the addon writes its audit log while a recorder
in front of it saves each request as it came; ``urlsan audit`` of that recording must write the
same records, in every mode and with every option that changes what the proxy decides or records
(each option of the table, addon/options.py, that ``urlsan audit`` takes)."""

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
from urlsan.addon.options import AUDIT, BY_NAME, taken_by

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
    b"/q/./r?utm_source=1&a=2&b=3&x=s3cret&token=t",
    b"/files;jsessionid=1/../admin%2fpanel",
    b"/" + b"a" * 70_000,  # over urlsan_max_target: never canonicalized
]


def _records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text("ascii").splitlines() if path.exists() else []
    return [{k: v for k, v in json.loads(line).items() if k != "ts"} for line in lines]


def _record_both(tmp_path: Path, sets: list[str], flags: list[str]) -> tuple[list[Any], ...]:
    """The records of a live proxy run with ``sets`` (--set NAME=VALUE), of ``urlsan audit``
    of its recording with ``flags``, and of ``urlsan audit`` of it with no option at all."""
    recording, log = tmp_path / "flows", tmp_path / "proxy.jsonl"
    recorder = tmp_path / "recorder.py"
    recorder.write_text(RECORDER.format(path=str(recording)))
    with upstream_server() as upstream:
        argv = mitmdump_command(
            "-s", str(recorder), "-s", str(REPO / "addon" / "script.py"),
            "--listen-host", "127.0.0.1", "-p", "0",
            "--mode", f"reverse:http://127.0.0.1:{upstream.port}",
            "--set", f"confdir={tmp_path / 'confdir'}",
            "--set", f"urlsan_log={log}",
            *(arg for setting in sets for arg in ("--set", setting)),
        )  # fmt: skip
        with Mitmdump(argv, log=log) as proxy:
            for target in TARGETS:
                request = b"GET " + target + b" HTTP/1.1\r\nHost: Example.COM:80\r\n"
                response = exchange(proxy.port, request + b"Connection: close\r\n\r\n")
                assert response.startswith(b"HTTP/1.1 "), response[:200]
    found = []
    for name, args in (("a", flags), ("plain", ["--mode", "rewrite"])):
        out = tmp_path / f"{name}.jsonl"
        run = subprocess.run(
            [*urlsan_command(), "audit", "-q", *args, "-o", str(out), str(recording)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        found.append(_records(out))
    return _records(log), *found


@pytest.mark.parametrize(
    "mode, profile",
    [("rewrite", "rfc3986"), ("audit", "rfc3986"), ("reject", "strict"), ("redirect", "crawler")],
)
def test_live_proxy_and_urlsan_audit_agree(tmp_path: Path, mode: str, profile: str) -> None:
    proxy_records, audit_records, _ = _record_both(
        tmp_path,
        [f"urlsan_mode={mode}", f"urlsan_profile={profile}"],
        ["--mode", mode, "--profile", profile],
    )
    assert len(proxy_records) == len(TARGETS) - 1  # the clean target leaves none
    # Each with its response's status: the upstream's, or urlsan's own 308, 400 or 414.
    assert {r["status"] for r in proxy_records} <= {200, 308, 400, 414}
    assert proxy_records == audit_records


# A value for each option `urlsan audit` takes that changes the records of TARGETS, in rewrite
# mode (the proxy's default) unless the option is the mode.
VALUES = {
    "mode": "redirect",
    "profile": "crawler",
    "rules": "+merge-slashes,-strip-fragment",
    "drop_params": "example.com:b,utm_*",
    "keep_params": "example.com:a,x",
    "filter": "!~u admin",
    "redact": "x,b",  # two names, in both
    "signed": "rewrite",
    "max_target": "40",
    "backends": "nginx,tomcat",
}
# What the proxy needs beside an option's value to take it (urlsan_max_inline must not exceed
# urlsan_max_target).
ALSO = {"max_target": ["urlsan_max_inline=20"]}


def test_every_option_urlsan_audit_takes_has_a_value_here() -> None:
    assert set(VALUES) == {o.name for o in taken_by(AUDIT)}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_each_option_gives_the_same_records_live_and_replayed(tmp_path: Path, name: str) -> None:
    option, value = BY_NAME[name], VALUES[name]
    sets = [f"{option.option}={value}", *ALSO.get(name, [])]
    flags = [f"{option.flag}={value}"]
    if name != "mode":
        sets.append("urlsan_mode=rewrite")
        flags += ["--mode", "rewrite"]
    proxy_records, audit_records, plain = _record_both(tmp_path, sets, flags)
    assert proxy_records, "the proxy wrote no records"
    assert proxy_records == audit_records
    assert audit_records != plain, (
        f"{option.option}={value} changed nothing: a test that cannot fail"
    )
