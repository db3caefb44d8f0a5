"""The JSON Lines writer and redaction."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from urlsan.addon.auditlog import DEFAULT_REDACT, MASK, AuditLog, Redactor

REDACT = Redactor.of(DEFAULT_REDACT)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("/a?token=abc&x=1", "/a?token=***&x=1"),
        ("/a?x=1&TOKEN=abc", "/a?x=1&TOKEN=***"),
        ("/a?tok%65n=abc", "/a?tok%65n=***"),  # the name is compared %-decoded
        ("/a?token=&x=1", "/a?token=&x=1"),  # nothing to mask
        ("/a?X-Amz-Signature=s&X-Amz-Credential=c", "/a?X-Amz-Signature=***&X-Amz-Credential=***"),
        ("/a?x=token=abc", "/a?x=token=abc"),  # a value, not a name
        ("/token=abc", "/token=abc"),  # the path is not a query
        ("/a?password=p#frag", "/a?password=***#frag"),
        ("/a?sig=s;se=2030", "/a?sig=***;se=2030"),
        ("http://user:pw@host/a", "http://user:***@host/a"),
        ("http://user@host/a", "http://user@host/a"),
    ],
)
def test_redact_text(text: str, expected: str) -> None:
    assert REDACT.text(text) == expected


def test_redact_record_edits() -> None:
    before = "/a?token=t%6fp&x=%7e"
    record = {
        "before": before,
        "after": "/a?token=top&x=~",
        "edits": [
            {"rule": "decode-unreserved", "component": "query", "start": 10, "end": 13,
             "before": "%6f", "after": "o"},
            {"rule": "decode-unreserved", "component": "query", "start": 17, "end": 20,
             "before": "%7e", "after": "~"},
            {"rule": "sort-query", "component": "query", "start": 3, "end": 20,
             "before": "x=%7e&token=t%6fp", "after": "token=top&x=~"},
            {"rule": "lowercase-host", "component": "userinfo", "start": 0, "end": 1,
             "before": "pw", "after": "pw"},
        ],
    }  # fmt: skip
    out = REDACT.record(record)
    assert out["before"] == "/a?token=***&x=%7e"
    assert out["after"] == "/a?token=***&x=~"
    secret, public, whole, userinfo = out["edits"]
    assert (secret["before"], secret["after"]) == (MASK, MASK)
    assert (public["before"], public["after"]) == ("%7e", "~")
    assert whole["before"] == "x=%7e&token=***" and whole["after"] == "token=***&x=~"
    assert userinfo["before"] == userinfo["after"] == MASK
    assert record["before"] == before  # the input record is not modified


def test_log_lines_are_whole_under_concurrency(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path), REDACT)
    big = "x" * 10_000  # long lines: still one write per line, under the lock

    def writer(n: int) -> None:
        for i in range(50):
            log.write({"before": f"/{n}/{i}/{big}", "after": "", "edits": []})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    lines = path.read_text("ascii").splitlines()
    assert len(lines) == 400
    assert {tuple(json.loads(line)["before"].split("/")[1:3]) for line in lines} == {
        (str(n), str(i)) for n in range(8) for i in range(50)
    }


def test_appends_and_is_ascii(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"old": 1}\n')
    log = AuditLog(str(path), REDACT)
    log.write({"before": "/caf\u00e9/\udcff", "after": "/caf%C3%A9/%FF", "edits": []})
    log.close()
    first, second = path.read_bytes().splitlines()
    assert first == b'{"old": 1}'
    assert second.isascii()
    assert json.loads(second)["before"] == "/caf\u00e9/\udcff"


def test_write_after_close_raises(tmp_path: Path) -> None:
    log = AuditLog(str(tmp_path / "a.jsonl"), REDACT)
    log.close()
    log.close()  # idempotent
    with pytest.raises(OSError):
        log.write({"before": "/", "after": "/", "edits": []})


def test_unwritable_path_raises_at_open(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        AuditLog(str(tmp_path / "missing" / "a.jsonl"), REDACT)
