"""The JSON Lines writer and redaction."""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from mitmproxy.test import taddons, tflow, tutils

from urlsan.addon import UrlSanitizer
from urlsan.audit import log as auditlog
from urlsan.audit.log import AuditLog
from urlsan.audit.record import MAX_EDITS, MAX_TEXT, limit_edits, limit_text
from urlsan.audit.redact import DEFAULT_REDACT, MASK, Redactor

REDACT = Redactor.of(DEFAULT_REDACT)
LOGGER = "urlsan.audit.log"
RECORD: dict[str, Any] = {"before": "/a/./b", "after": "/a/b", "edits": []}


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


@pytest.mark.parametrize(
    "before, after, masked",
    [
        ("/a?TOKEN=abc&x=%41", "/a?TOKEN=abc&x=A", "/a?TOKEN=***&x=A"),
        ("/a?x=%41&tok%65n=abc", "/a?x=A&token=abc", "/a?x=A&token=***"),  # %-encoded name
        ("/a?q=%7e&Sig=%41bc", "/a?q=~&Sig=Abc", "/a?q=~&Sig=***"),  # escapes in values only
        ("http://u:pw@h/a", "http://u:pw@h/a", "http://u:***@h/a"),
        ("/a?x=1&monkey=2", "/a?x=1&monkey=2", None),  # "key" inside a name: not a secret
        ("/a?token", "/a?token", None),  # no value
        ("/token=abc/x", "/token=abc/x", None),  # not a query
        ("/a/./b", "/a/b", None),
    ],
)
def test_redact_record_finds_every_secret(before: str, after: str, masked: str | None) -> None:
    record = {"before": before, "after": after, "edits": []}
    out = REDACT.record(record)
    if masked is None:
        assert out == record
    else:
        assert out["after"] == masked
        assert "abc" not in out["before"].lower() and "pw@" not in out["before"]


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


def test_write_after_close_fails_and_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = AuditLog(str(tmp_path / "a.jsonl"), REDACT)
    log.close()
    log.close()  # idempotent
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert log.write(RECORD) is False
    assert log.lost == 1
    assert "could not write to audit log" in caplog.text and "closed" in caplog.text


def test_unwritable_path_raises_at_open(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        AuditLog(str(tmp_path / "missing" / "a.jsonl"), REDACT)


# --- faults while running: each reported once, no partial line, nothing lost that can be kept


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def reports(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


class FullDisk:
    """``os`` as the audit log sees it on a disk with ``room`` bytes left: a short write, then
    ENOSPC.  ``can_truncate=False``: as on a file that cannot be cut back (a pipe, a device).
    """

    def __init__(self, room: int, *, can_truncate: bool = True) -> None:
        self.room = room
        self.can_truncate = can_truncate

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: Any) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = os.write(fd, bytes(data[: self.room]))
        self.room -= n
        return n

    def ftruncate(self, fd: int, length: int) -> None:
        if not self.can_truncate:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        os.ftruncate(fd, length)


def test_disk_full_is_reported_once_and_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "a.jsonl"
    log = AuditLog(str(path), REDACT)
    assert log.write(RECORD) is True
    size = path.stat().st_size
    disk = FullDisk(room=10)
    monkeypatch.setattr(auditlog, "os", disk)
    log.recovery_settle = 0.0
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert [log.write(RECORD) for _ in range(5)] == [False] * 5
        assert path.stat().st_size == size  # the 10 bytes that fitted were cut off again
        disk.room = 1 << 20  # space is freed
        assert log.write(RECORD) and log.write(RECORD)
    log.close()
    assert len(lines(path)) == 3
    assert log.lost == 5
    (error, error_text), (info, info_text) = reports(caplog)
    assert error == logging.ERROR and "could not write to audit log" in error_text
    assert "No space left on device" in error_text
    assert info == logging.INFO and "writable again; 5 records were lost" in info_text


def test_recovery_is_reported_once_writes_have_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A nearly full disk takes short records and refuses long ones: one error, not one per flap.
    path = tmp_path / "a.jsonl"
    log = AuditLog(str(path), REDACT)
    disk = FullDisk(room=0)
    monkeypatch.setattr(auditlog, "os", disk)
    with caplog.at_level(logging.DEBUG, LOGGER):
        for _ in range(3):
            disk.room = 0
            assert log.write(RECORD) is False
            disk.room = 1 << 20
            assert log.write(RECORD) is True
        assert [level for level, _ in reports(caplog)] == [logging.ERROR]
        log.recovery_settle = 0.0  # as if writes had succeeded for long enough
        assert log.write(RECORD) is True
    assert [level for level, _ in reports(caplog)] == [logging.ERROR, logging.INFO]
    assert "3 records were lost" in reports(caplog)[1][1]
    assert len(lines(path)) == 4 and log.lost == 3


def test_partial_line_that_cannot_be_cut_back_is_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.jsonl"
    log = AuditLog(str(path), REDACT)
    disk = FullDisk(room=10, can_truncate=False)
    monkeypatch.setattr(auditlog, "os", disk)
    assert log.write(RECORD) is False
    disk.room = 1 << 20
    assert log.write(RECORD) is True
    torn, whole = path.read_bytes().splitlines()
    assert len(torn) == 10  # one torn line, and the next record whole on its own line
    assert json.loads(whole)["before"] == RECORD["before"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_full_device_is_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    log = AuditLog("/dev/full", REDACT)
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert [log.write(RECORD) for _ in range(3)] == [False] * 3
    log.close()
    ((level, text),) = reports(caplog)
    assert level == logging.ERROR and "No space left on device" in text
    assert log.lost == 3


def numbered(i: int) -> dict[str, Any]:
    return {"before": f"/{i}", "after": f"/{i}", "edits": []}


@pytest.mark.parametrize("noticed_by", ["check", "pending_limit", "close"])
def test_removed_log_is_created_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, noticed_by: str
) -> None:
    path = tmp_path / "a.jsonl"
    log = AuditLog(str(path), REDACT)
    log.check_interval = 3600.0  # the path is checked on a timer, not at every write
    assert log.write(numbered(0))
    path.unlink()
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert log.write(numbered(1)) and log.write(numbered(2))  # into the removed file
        assert not path.exists()
        if noticed_by == "check":
            log.check_interval = 0.0
        elif noticed_by == "pending_limit":
            log.pending_limit = 1
        if noticed_by != "close":
            assert log.write(numbered(3))
            assert path.exists()
        log.close()  # a clean shutdown loses nothing either
    # Nothing lost: the lines written since the last check are written again, in order.
    expected = ["/0", "/1", "/2", "/3"] if noticed_by != "close" else ["/0", "/1", "/2"]
    assert [r["before"] for r in lines(path)] == expected
    assert path.stat().st_mode & 0o777 == 0o600
    ((level, text),) = reports(caplog)
    assert level == logging.WARNING and "was removed while running; created it again" in text
    assert log.lost == 0


@pytest.mark.parametrize("recreated", [True, False], ids=["create", "nocreate"])
def test_rotated_log_is_reopened(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, recreated: bool
) -> None:
    path, rotated = tmp_path / "a.jsonl", tmp_path / "a.jsonl.1"
    log = AuditLog(str(path), REDACT)
    assert log.write(RECORD)
    path.rename(rotated)  # logrotate: mv, then (create) a new empty file
    if recreated:
        path.write_bytes(b"")
    log.check_interval = 3600.0
    assert log.write(RECORD)  # before the next check: the record goes to the moved file
    log.check_interval = 0.0
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert log.write(RECORD)
    log.close()
    assert (len(lines(rotated)), len(lines(path))) == (2, 1)
    ((level, text),) = reports(caplog)
    assert level == logging.INFO and "moved away or replaced" in text


def test_removed_with_its_directory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "a.jsonl"
    log = AuditLog(str(path), REDACT)
    log.check_interval = 3600.0
    assert log.write(numbered(0)) and log.write(numbered(1))
    path.unlink()
    folder.rmdir()
    log.check_interval = 0.0  # checked at every write from now on
    with caplog.at_level(logging.DEBUG, LOGGER):
        # The two lines written since the last check cannot be written again: lost with it.
        assert [log.write(RECORD) for _ in range(3)] == [False] * 3
        folder.mkdir()
        log.recovery_settle = 0.0
        assert log.write(RECORD) is True
    log.close()
    assert len(lines(path)) == 1 and log.lost == 2 + 3
    levels = [level for level, _ in reports(caplog)]
    assert levels == [logging.ERROR, logging.WARNING, logging.INFO]
    assert "removed and cannot be created again" in reports(caplog)[0][1]
    assert "5 records were lost" in reports(caplog)[2][1]


def test_removed_with_its_directory_before_closing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "a.jsonl"
    log = AuditLog(str(path), REDACT)
    log.check_interval = 3600.0
    assert log.write(numbered(0)) and log.write(numbered(1))
    path.unlink()
    folder.rmdir()
    with caplog.at_level(logging.DEBUG, LOGGER):
        log.close()
    assert log.lost == 2  # counted, although their write had succeeded
    ((level, text),) = reports(caplog)
    assert level == logging.ERROR and "removed and cannot be created again" in text


# --- caps: one hostile request can neither write megabytes nor stall the proxy


def edit(i: int, before: str = "\x01", after: str = "%01") -> dict[str, Any]:
    return {"rule": "r", "component": "path", "start": i, "end": i + 1, "before": before,
            "after": after}  # fmt: skip


def test_edits_are_capped() -> None:
    edits = [edit(i) for i in range(MAX_EDITS + 150)]
    record = {"before": "/", "edits": edits}
    out = limit_edits(record)
    assert out["edits"] == edits[:MAX_EDITS] and out["edits_truncated"] == 150
    assert len(record["edits"]) == MAX_EDITS + 150  # not modified
    small = {"before": "/", "edits": edits[:MAX_EDITS]}
    assert limit_edits(small) is small


def test_long_strings_are_cut_and_marked() -> None:
    record = {
        "before": "/" + "a" * (2 * MAX_TEXT),
        "after": "/b",
        "edits": [edit(0, "x" * (MAX_TEXT + 1)), edit(1)],
        "findings": [{"rule": "f", "component": "path", "offset": 0, "detail": "d" * 9000}],
    }
    out = limit_text(record)
    assert out["before"] == record["before"][:MAX_TEXT] and out["truncated"] is True
    assert out["after"] == "/b"
    cut, kept = out["edits"]
    assert len(cut["before"]) == MAX_TEXT and cut["truncated"] is True and cut["after"] == "%01"
    assert kept == edit(1)
    assert out["findings"][0]["truncated"] is True
    assert "truncated" not in record and "truncated" not in record["edits"][0]  # not modified
    small = {"before": "/", "after": "/", "edits": [edit(0)], "findings": []}
    assert limit_text(small) is small


def test_a_secret_at_the_cut_is_masked_first(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    secret = "s3cr3t" * 10
    target = "/a?" + "x=1&" * ((MAX_TEXT - 10) // 4) + "token=" + secret + "&y=" + "z" * 100
    assert target.index(secret) < MAX_TEXT < len(target)
    log = AuditLog(str(path), REDACT)
    log.write({"before": target, "after": target, "edits": []})
    log.close()
    assert "s3c" not in path.read_text()
    (record,) = lines(path)
    assert len(record["before"]) == MAX_TEXT and record["truncated"] is True


def test_a_huge_target_gives_a_small_record(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        # Inline (not in the worker process): the caps are the same either way.
        tctx.configure(addon, urlsan_log=str(path), urlsan_max_inline=32_768)
        hostile = b"\x01%" * 5000  # 10,000 rewrites in each component, 20 KB in all
        f = tflow.tflow(req=tutils.treq(path=b"/" + hostile + b"?" + hostile))
        addon.requestheaders(f)
        facts = f.metadata["urlsan"]
        assert len(facts["edits"]) == MAX_EDITS
        # core folds each component's rewrites past the first 64 into its last edit
        assert facts["edits_truncated"] == 2 * 64 - MAX_EDITS
        canonical = b"%01%25" * 5000
        assert f.request.data.path == b"/" + canonical + b"?" + canonical  # the rewrite is whole
        addon.done()
    (record,) = lines(path)
    assert len(record["edits"]) == MAX_EDITS and record["edits_truncated"] == 28
    assert len(record["after"]) == MAX_TEXT and record["truncated"] is True
    folded = record["edits"][63]  # spans the rest of the path: cut like any other string
    assert len(folded["after"]) == MAX_TEXT and folded["truncated"] is True
    assert path.stat().st_size < 100_000


def test_lost_records_are_counted_in_stats(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    addon = UrlSanitizer()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, urlsan_log=str(tmp_path / "a.jsonl"))
        assert addon.log is not None
        addon.log.close()  # every later write fails
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                f = tflow.tflow(req=tutils.treq(path=b"/a/./b"))
                addon.requestheaders(f)
                f.response = tutils.tresp()
                addon.responseheaders(f)  # the record is written once the status is known
        stats = json.loads(tctx.command(addon.stats))
    assert stats["audit_records_lost"] == 3 and stats["errors"] == 0
    assert len([r for r in caplog.records if "audit log" in r.getMessage()]) == 1
    assert "Audit records lost: 3." in addon.summary()
