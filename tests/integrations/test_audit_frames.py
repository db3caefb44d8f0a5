"""What urlsan.spark.audit and urlsan.dask.audit share (urlsan/_audit_frames.py), without a
cluster: the record's fields as the record builder writes them and the docs list them, lines read
as ``urlsan audit`` reads their file, and the options passed to the decision's settings."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integrations.audit_corpus import ACCESS_LINES, ACCESS_LOG, urlsan_audit
from urlsan import _audit_frames
from urlsan.cli.main import main

AUDIT_LOG_DOC = Path(__file__).resolve().parents[2] / "docs" / "audit-log.md"


def documented() -> dict[str, set[str]]:
    """The fields of docs/audit-log.md's table, and the keys of those it shows as [{...}]."""
    table = AUDIT_LOG_DOC.read_text().split("## Fields", 1)[1].split("\n## ", 1)[0]
    fields: dict[str, set[str]] = {}
    for row in re.findall(r"^\| (.+?) \| (.+) \|$", table, re.MULTILINE):
        names = re.findall(r"`(\w+)`", row[0])
        nested = re.search(r"`\[\{([\w, ]+)\}\]`", row[1])
        for name in names:
            fields[name] = set(nested.group(1).split(", ")) if nested else set()
    return fields


def test_fields_are_the_documented_ones() -> None:
    record = _audit_frames.exemplar()
    docs = documented()
    assert set(record) == set(docs) == set(_audit_frames.FIELDS)
    for name in ("edits", "findings", "backends"):
        # "truncated" is the table's own row: on the record, an edit or a finding.
        assert set(record[name][0]) - {"truncated"} == docs[name], name


def test_lines_with_or_without_line_ends(tmp_path: Path) -> None:
    checker = _audit_frames.auditor()
    source = tmp_path / "access.log"
    source.write_bytes(ACCESS_LOG)
    expected = [line.decode() for line in urlsan_audit(tmp_path, [source])]
    # Dask's read_text(errors="surrogateescape"): text with its line end, every byte kept.
    as_read_text = [line.decode("utf-8", "surrogateescape") + "\n" for line in ACCESS_LINES]
    assert _audit_frames.line_records(ACCESS_LINES, checker) == expected
    assert _audit_frames.line_records(as_read_text, checker) == expected
    assert _audit_frames.line_records([None, *ACCESS_LINES[:2]], checker) == expected[:1]


def test_cdxj_lines(tmp_path: Path) -> None:
    lines = [
        'com,example)/%7euser/./a 20261122045758 {"url": "http://example.com/%7euser/./a", '
        '"status": "200"}',
        'com,example)/clean 20261122045759 {"url": "http://example.com/clean"}',
    ]
    source = tmp_path / "index.cdxj"
    source.write_text("\n".join(lines) + "\n")
    expected = [line.decode() for line in urlsan_audit(tmp_path, [source])]
    assert len(expected) == 1
    assert _audit_frames.line_records(lines, _audit_frames.auditor(), "cdxj") == expected


def test_options_reach_the_decision(tmp_path: Path) -> None:
    """Keywords of `decision.settings` that `urlsan audit` has no flag for yet work too."""
    lines = [ACCESS_LINES[0], ACCESS_LINES[9]]
    short = _audit_frames.line_records(lines, _audit_frames.auditor(max_target=40))
    assert [json.loads(r)["action"] for r in short] == ["audited", "skipped-oversize"]
    dropped = _audit_frames.line_records(lines[:1], _audit_frames.auditor(drop_params=["token"]))
    assert json.loads(dropped[0])["after"] == "/~user/a"
    source = tmp_path / "access.log"
    source.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    assert main(["audit", "-q", "--redact", "q,token", "-o", str(out), str(source)]) == 0
    redacted = _audit_frames.line_records(lines, _audit_frames.auditor(redact=["q", "token"]))
    assert redacted == out.read_text().splitlines()
    assert _audit_frames.line_records(lines, _audit_frames.auditor(redact="q,token")) == redacted


def test_bad_options_and_formats() -> None:
    with pytest.raises(ValueError, match="drop_params"):
        _audit_frames.auditor(drop_params=["a:b:c:d"])
    with pytest.raises(ValueError, match="mode"):
        _audit_frames.auditor(mode="nope")
    with pytest.raises(TypeError):
        _audit_frames.auditor(quiet=True)
    with pytest.raises(ValueError, match="lines are read as"):
        _audit_frames.format_of("cdx", lines=True)  # its header names the fields of the rest
    with pytest.raises(ValueError, match="not a mitmproxy flow file"):
        _audit_frames.file_records(b"just text\n", _audit_frames.auditor(), name="x.txt")
