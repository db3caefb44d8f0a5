"""Fuzzing `canonicalize` and the addon's request path (issue #5).

Byte-level hypothesis properties with a budget from URLSAN_FUZZ_EXAMPLES (default 300 per test;
`make check-all` raises it); the atheris targets of tools/fuzz.py (canonicalize, and the addon's
hook) run for URLSAN_FUZZ_SECONDS each (default 4; skipped without atheris); and every input saved
under tests/data/fuzz/ replayed as a regression case.  No input may make the core raise
(outside strict and reject-escaped-slash), loop, or take more than linear time
(test_linear_time.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hardening import support
from tests.hardening.fuzzing import (
    FORMS,
    FUZZ_DATA,
    POLICY_NAMES,
    check_and_save,
    save_last_failure,
)

EXAMPLES = int(os.environ.get("URLSAN_FUZZ_EXAMPLES", "300"))
SECONDS = int(os.environ.get("URLSAN_FUZZ_SECONDS", "4"))
REPO = Path(__file__).resolve().parents[2]

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Bytes that matter to URL parsers, so that hypothesis builds tricky shapes more often than
# uniform bytes would: delimiters, escapes and their pieces, dots, slashes, high bytes.
_ATOMS = [
    b"/",
    b".",
    b"..",
    b"%",
    b"%2e",
    b"%2E",
    b"%2f",
    b"%2F",
    b"%5c",
    b"%25",
    b"%00",
    b"?",
    b"#",
    b"&",
    b"=",
    b";",
    b"\\",
    b"@",
    b":",
    b"[",
    b"]",
    b"//",
    b"http://",
    b"a",
    b"A",
    b"0x7f",
    b"0",
    b"1",
    b"%u002e",
    b"%c0%ae",
    b"\xc0\xae",
    b"\xef\xbc\x8e",
    b"\xff",
    b"\x00",
    b" ",
    b"\r\n",
    b"~",
    b"%7e",
    b"+",
    b"'",
    b"*",
]
tricky_bytes = st.lists(st.sampled_from(_ATOMS) | st.binary(max_size=3), max_size=30).map(b"".join)
any_bytes = st.binary(max_size=300)
targets = tricky_bytes | any_bytes


def _count(n: int) -> None:
    support.FIGURES["fuzz: hypothesis cases tried"] += n


def saving(run: Callable[[], None]) -> None:
    """Run a hypothesis test; when it fails, keep its minimal input under tests/data/fuzz/."""
    try:
        run()
    except BaseException:
        saved = save_last_failure()
        if saved is not None:
            print(f"failing input saved as {saved}")
        raise


@FUZZ
@given(data=targets, policy=st.sampled_from(POLICY_NAMES), form=st.sampled_from(FORMS))
def _canonicalize_bytes(data: bytes, policy: str, form: str) -> None:
    _count(1)
    check_and_save(data, policy, form)


def test_canonicalize_bytes() -> None:
    saving(_canonicalize_bytes)


@FUZZ
@given(
    data=st.text(max_size=200), policy=st.sampled_from(POLICY_NAMES), form=st.sampled_from(FORMS)
)
def _canonicalize_text(data: str, policy: str, form: str) -> None:
    _count(1)
    check_and_save(data, policy, form)


def test_canonicalize_text() -> None:
    saving(_canonicalize_text)


def saved_inputs() -> list[Path]:
    return sorted(p for p in FUZZ_DATA.glob("*") if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", saved_inputs(), ids=lambda p: p.name)
def test_saved_inputs_replay(path: Path) -> None:
    data = path.read_bytes()
    for policy in POLICY_NAMES:
        for form in FORMS:
            check_and_save(data, policy, form)
    support.FIGURES["fuzz: saved regression inputs replayed"] += 1


# --- the addon's request path, in mitmproxy's own test harness


@pytest.fixture(scope="module")
def addon_env() -> object:
    reason = support.addon_missing()
    if reason:
        pytest.skip(reason)
    return True


MODES = ("rewrite", "audit", "reject", "redirect")


@FUZZ
@given(
    path=targets,
    mode=st.sampled_from(MODES),
    profile=st.sampled_from(("rfc3986", "crawler", "strict")),
    method=st.sampled_from((b"GET", b"POST", b"OPTIONS")),
)
def test_addon_request_path(
    addon_env: object, path: bytes, mode: str, profile: str, method: bytes
) -> None:
    from mitmproxy.test import taddons, tflow, tutils

    from urlsan.addon import UrlSanitizer

    _count(1)
    addon = UrlSanitizer()
    with tempfile.TemporaryDirectory() as tmp, taddons.context(addon) as tctx:
        log = Path(tmp) / "audit.jsonl"
        tctx.configure(addon, urlsan_mode=mode, urlsan_profile=profile, urlsan_log=str(log))
        # mitmproxy's HTTP/1 reader only hands the addon targets that start with "/" or "*"
        # (or absolute-form, split by mitmproxy); test_known_bugs.py covers the others.
        if not path.startswith((b"/", b"*")):
            path = b"/" + path
        flow = tflow.tflow(req=tutils.treq(method=method, path=path))
        before = flow.request.data.path
        try:
            addon.requestheaders(flow)
        except Exception:
            from tests.hardening.fuzzing import save

            save(path, "addon-crash")
            raise
        assert addon.errors == 0, "the addon swallowed an internal error (see its log)"
        after = flow.request.data.path
        if after != before:
            assert all(0x21 <= b <= 0x7E for b in after), after
        lines = log.read_bytes().splitlines() if log.exists() else []
        assert len(lines) <= 1
        for line in lines:
            assert isinstance(json.loads(line), dict)


# --- atheris, for a bounded time


@pytest.mark.parametrize("target", ["atheris", "atheris-addon"])
def test_atheris_bounded(tmp_path: Path, target: str) -> None:
    if target == "atheris-addon" and support.addon_missing():
        pytest.skip(support.addon_missing() or "")
    pytest.importorskip(
        "atheris",
        reason="atheris is not installed (pip install atheris): "
        "the coverage-guided fuzz run is skipped; "
        "hypothesis covers the same target",
    )
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    cmd = [
        sys.executable,
        str(REPO / "tools" / "fuzz.py"),
        target,
        f"-max_total_time={SECONDS}",
        "-rss_limit_mb=2048",
        "-timeout=10",
        f"-artifact_prefix={FUZZ_DATA}/{target}-",
        str(corpus),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS + 120, cwd=REPO)
    tail = (proc.stdout + proc.stderr)[-3000:]
    runs = [line for line in tail.splitlines() if "Done" in line and "runs" in line]
    if runs:
        n = int(runs[-1].split("Done", 1)[1].split("runs")[0].strip())
        support.FIGURES[f"fuzz: {target} executions"] += n
    assert proc.returncode == 0, f"atheris found a failing input (saved in {FUZZ_DATA}):\n{tail}"
