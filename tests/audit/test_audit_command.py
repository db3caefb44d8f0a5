"""`urlsan audit` (cli/audit.py) on small recordings made here; real ones are in tests/e2e."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from urlsan.audit import sources
from urlsan.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

LOG = (
    b'192.0.2.7 - - [22/Nov/2026:04:57:58 +0000] "GET /%7euser/./a?token=s3cret HTTP/1.1" 200 3 '
    b'"-" "curl/8"\n'
    b'192.0.2.7 - - [22/Nov/2026:04:57:59 +0000] "GET /clean HTTP/1.1" 200 3 "-" "curl/8"\n'
    b'192.0.2.8 - - [22/Nov/2026:04:58:00 +0000] "GET /a%2fb HTTP/1.1" 200 3 "-" "curl/8"\n'
    b'192.0.2.8 - - [22/Nov/2026:04:58:01 +0000] "GET /s?X-Amz-Signature=ab&X-Amz-Credential=c'
    b'&%7e=1 HTTP/1.1" 200 3 "-" "-"\n'
)


def audit(tmp_path: Path, *args: str, data: bytes = LOG) -> tuple[int, list[dict[str, Any]]]:
    source = tmp_path / "access.log"
    if not source.exists():
        source.write_bytes(data)
    out = tmp_path / "audit.jsonl"
    status = main(["audit", "-o", str(out), *args, str(source)])
    lines = out.read_bytes().splitlines() if out.exists() else []
    return status, [json.loads(line) for line in lines]


def test_records_as_the_proxy_writes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, records = audit(tmp_path)
    assert status == 0
    # /clean is canonical and has no findings: no record, as in the proxy's audit mode.
    assert [(r["before"], r["action"]) for r in records] == [
        ("/%7euser/./a?token=***", "audited"),  # the secret masked before writing
        ("/a%2fb", "audited"),
        ("/s?X-Amz-Signature=***&X-Amz-Credential=***&%7e=1", "skipped-signed"),
    ]
    first = records[0]
    assert first["after"] == "/~user/a?token=***" and first["profile"] == "rfc3986"
    assert first["ts"] == "2026-11-22T04:57:58.000Z" and first["client"] == "192.0.2.7"
    assert {e["rule"] for e in first["edits"]} == {"decode-unreserved", "remove-dot-segments"}
    assert records[1]["after"] == "/a%2Fb"
    assert [f["rule"] for f in records[1]["findings"]] == ["escaped-slash"]
    assert "4 requests checked, 3 audit records written" in capsys.readouterr().err
    # The report reads them unchanged.
    assert (
        main(["report", "--json", "-o", str(tmp_path / "r.json"), str(tmp_path / "audit.jsonl")])
        == 0
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["requests"] == 3 and report["actions"]["audited"] == 2


def test_profile_rules_and_redact(tmp_path: Path) -> None:
    status, records = audit(tmp_path, "--rules", "+reject-escaped-slash", "--redact", "other")
    assert status == 0
    escaped = records[1]
    assert escaped["action"] == "audited" and escaped["after"] is None
    assert "escaped" in escaped["reason"] and escaped["rejected_by"] == "reject-escaped-slash"
    assert "s3cret" in records[0]["before"]  # --redact replaced the list
    _, crawler = audit(tmp_path, "--profile", "crawler")
    assert crawler[0]["profile"] == "crawler"


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--profile", "nope"], "unknown profile"), (["--rules", "+nope"], "nope")],
)
def test_bad_policy_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    status, _ = audit(tmp_path, *args)
    assert status == 2 and message in capsys.readouterr().err


def test_unreadable_lines_are_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, records = audit(tmp_path, data=LOG + b"garbage\n" * 7)
    assert status == 3 and len(records) == 3
    err = capsys.readouterr().err
    assert "7 unreadable lines or entries left out, e.g." in err
    assert err.count("not a combined-format access log line") == 5  # the first few shown


def test_not_a_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, records = audit(tmp_path, data=b"\x7fELF\x02\x01\x01\x00")
    assert status == 2 and records == []
    err = capsys.readouterr().err
    assert "not a format urlsan audit reads" in err
    assert all(fmt in err for fmt in sources.FORMATS)  # the ones it does read
    assert main(["audit", str(tmp_path / "missing")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_format_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = audit(tmp_path, "--format", "har")
    assert status == 3 and "not a HAR file" in capsys.readouterr().err


# A WARC record's first line, a flow file's first bytes: detected as such without the package.
NEEDING = {
    "warc": ("warcio", b"WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n"),
    "flows": ("mitmproxy", b"2274:9:websocket;0:~8:response;"),
}


def test_every_optional_reader_is_tested() -> None:
    assert set(NEEDING) == set(sources.NEEDS) and set(sources.NEEDS) <= set(sources.FORMATS)
    assert all(NEEDING[fmt][0] == need.module for fmt, need in sources.NEEDS.items())


@pytest.mark.parametrize("named", [False, True], ids=["detected", "named"])
@pytest.mark.parametrize("fmt", sorted(NEEDING))
def test_a_reader_not_installed(tmp_path: Path, fmt: str, named: bool) -> None:
    """Without the package a format's reader needs: exit status 2 before anything is written,
    and a message that names what to install, from a wheel as from a checkout."""
    module, data = NEEDING[fmt]
    source, out = tmp_path / f"recording.{fmt}", tmp_path / "audit.jsonl"
    source.write_bytes(data)
    args = ["audit", "-o", str(out), *(["--format", fmt] if named else []), str(source)]
    # sys.modules[name] = None makes `import name` fail as if it were not installed.
    code = (
        f"import sys; sys.modules[{module!r}] = None; from urlsan.cli.main import main; "
        f"sys.exit(main({args!r}))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    err = run.stderr
    assert f"{source}: reading " in err and f"needs {module}, which is not installed" in err
    # The package with the versions pyproject.toml declares for the extra, and the extra.
    m = re.search(
        r"-m pip install '([^']+)' \(in a checkout of urlsan: pip install -e '\.\[(\w+)\]'\)", err
    )
    assert m, err
    extra = m.group(2)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in declared["optional-dependencies"][extra]]
    assert Requirement(m.group(1)) in wanted and Requirement(m.group(1)).name == module
    assert "urlsan[" not in err  # urlsan is on no package index
    assert not out.exists()


def test_har_gzip_in_and_out_and_stdout(tmp_path: Path) -> None:
    har = {
        "log": {
            "entries": [
                {
                    "startedDateTime": "2026-11-22T04:57:58.5+00:00",
                    "request": {
                        "method": "GET",
                        "url": "http://Example.COM:80/%7ea",
                        "httpVersion": "HTTP/1.1",
                    },
                }
            ]
        }
    }
    source = tmp_path / "x.har"
    source.write_bytes(gzip.compress(json.dumps(har).encode()))
    out = tmp_path / "audit.jsonl.gz"
    assert main(["audit", "-q", "-o", str(out), str(source)]) == 0
    [record] = [json.loads(line) for line in gzip.decompress(out.read_bytes()).splitlines()]
    assert record["host"] == "example.com" and record["after"] == "/~a"
    assert {e["component"] for e in record["edits"]} == {"path", "host", "port"}
    # Standard output, through the installed command.
    run = subprocess.run(
        [sys.executable, "-m", "urlsan.cli", "audit", "-"],
        input=source.read_bytes(),
        capture_output=True,
        timeout=60,
    )
    assert run.returncode == 0 and json.loads(run.stdout)["before"] == "/%7ea"
    assert b"\r" not in run.stderr  # no progress bar when stderr is no terminal


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_output_that_cannot_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "access.log"
    source.write_bytes(LOG * 2000)  # more than one buffer of records
    assert main(["audit", "-o", "/dev/full", str(source)]) == 4
    err = capsys.readouterr().err
    assert "urlsan audit: cannot write /dev/full: No space left on device" in err


def test_a_torn_gzip_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = gzip.compress(LOG * 2000)
    source = tmp_path / "access.log.gz"
    source.write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "audit.jsonl"
    assert main(["audit", "-o", str(out), str(source)]) == 3
    err = capsys.readouterr().err
    assert "1 unreadable line or entry left out" in err
    assert "the gzip data ends at uncompressed byte" in err
    assert out.read_bytes().count(b"\n") >= 100  # what was read before the tear is kept
    # Torn within its first bytes: the format cannot even be found.
    source.write_bytes(whole[:40])
    assert main(["audit", str(source)]) == 2
    err = capsys.readouterr().err
    assert f"{source}: the gzip data ends at uncompressed byte 0, cut short or corrupt" in err


def test_backends(tmp_path: Path) -> None:
    # nginx decodes %2F and then routes /a/b: a record names it and its reading; the proxy in
    # reject mode would have answered 400.
    status, records = audit(tmp_path, "--backends", "nginx")
    assert status == 0
    (record,) = [r for r in records if r["before"] == "/a%2fb"]
    assert record["backends"] == [
        {"server": "nginx", "path": "/a/b", "rfc": "/a%2Fb", "climbs": False}
    ]
    assert record["action"] == "audited"
    status, records = audit(tmp_path, "--backends", "nginx", "--mode", "reject")
    (record,) = [r for r in records if r["before"] == "/a%2fb"]
    assert (record["action"], record["rejected_by"]) == ("rejected", "urlsan_backends")
