"""The audit record builder shared by the addon and `urlsan audit` (audit/record.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from urlsan.audit import record
from urlsan.audit.redact import DEFAULT_REDACT, Redactor
from urlsan.core import Edit, Finding, Policy, Result, canonicalize

REDACTOR = Redactor.of(DEFAULT_REDACT)


def build(result: Result, **kw: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "ts": "2026-11-22T04:57:58.197Z",
        "client": "192.0.2.10:51234",
        "method": "GET",
        "scheme": "http",
        "host": "example.com",
        "http_version": "HTTP/1.1",
        "before": result.input,
        "after": result.url,
        "action": "rewritten",
        "edits": result.edits,
        "findings": result.findings,
        **kw,
    }
    return record.build(**fields)


def test_fields_in_the_order_the_proxy_writes_them() -> None:
    result = canonicalize("/%7euser/./a?q=%41", Policy.profile("rfc3986"), form="origin")
    rec = build(result, profile="rfc3986")
    assert list(rec) == [
        "ts", "client", "method", "scheme", "host", "http_version", "profile",
        "before", "after", "action", "edits", "findings", "severity", "target_severity",
        "severity_reason", "status",
    ]  # fmt: skip
    assert rec["before"] == "/%7euser/./a?q=%41" and rec["after"] == "/~user/a?q=A"
    assert rec["edits"] == [e.as_dict() for e in result.edits]
    assert rec["findings"] == [{**f.as_dict(), "severity": "info"} for f in result.findings]
    assert rec["severity"] == "info"  # the highest of its findings': a "./" segment
    assert "severity" not in build(canonicalize("/a"))  # a record without findings has none
    assert "profile" not in build(result)  # only when the writer names it
    assert rec["status"] is None  # no response (yet)


def test_status_is_written_by_both_encoders() -> None:
    """The response's status, last: the fast encoder and the JSON encoder write the same."""
    result = canonicalize("/%7euser/./a?q=%41", Policy.profile("rfc3986"), form="origin")
    for status in (None, 200, 308, 502):
        rec = build(result, profile="rfc3986", status=status)
        fast = record.encode_record(rec)
        assert fast == record.encode_json(rec)
        assert json.loads(fast)["status"] == status


def test_a_refused_target() -> None:
    finding = Finding("reject-escaped-slash", "path", 2, "escaped slash")
    rec = build(
        Result("/a%2fb", "", (), (finding,)),
        action="rejected",
        after=None,
        reason="escaped slash (reject-escaped-slash, path at offset 2)",
        rejected_by="reject-escaped-slash",
    )
    assert rec["after"] is None
    assert rec["findings"] == [{**finding.as_dict(), "severity": finding.severity}]
    assert list(rec)[-6:] == [
        "severity", "target_severity", "severity_reason", "reason", "rejected_by", "status"
    ]  # fmt: skip
    assert rec["rejected_by"] == "reject-escaped-slash"


def test_edits_are_capped_and_counted() -> None:
    many = tuple(Edit("encode-unsafe", "path", i, i + 1, " ", "%20") for i in range(250))
    rec = build(Result(" " * 250, "%20" * 250, many))
    assert len(rec["edits"]) == record.MAX_EDITS and rec["edits_truncated"] == 150
    # A caller that kept only the first edits says how many there were.
    rec = build(Result(" " * 250, "%20" * 250, many[:100]), edits_total=250)
    assert len(rec["edits"]) == record.MAX_EDITS and rec["edits_truncated"] == 150
    rec = build(Result("/a", "/a"), edits=(Edit("lowercase-host", "host", 0, 2, "EX", "ex"),))
    assert rec["edits"][0]["component"] == "host" and "edits_truncated" not in rec


def test_serialize_masks_secrets_and_cuts_long_strings() -> None:
    result = canonicalize("/a?token=s3cret&q=%41", Policy.profile("rfc3986"), form="origin")
    line = record.serialize(build(result), REDACTOR)
    assert line.endswith(b"\n") and b"s3cret" not in line and line.isascii()
    assert json.loads(line)["after"] == "/a?token=***&q=A"
    long = "/" + "a" * 20000
    cut = json.loads(record.serialize(build(Result(long, long)), REDACTOR))
    assert len(cut["before"]) == record.MAX_TEXT and cut["truncated"] is True


def test_rfc3339_and_address() -> None:
    assert record.rfc3339(1795323478.1979) == "2026-11-22T04:57:58.197Z"
    assert record.rfc3339(1795323478.0) == "2026-11-22T04:57:58.000Z"
    assert record.rfc3339(1795323478.9999) == "2026-11-22T04:57:58.999Z"
    # A flow's float a hair below a millisecond, and the same time as a HAR export writes it
    # (datetime rounds to the microsecond): one ts, as the flow and HAR audits must agree.
    har = datetime.fromtimestamp(1795556015.4459999, UTC).isoformat()
    assert har == "2026-11-24T21:33:35.446000+00:00"
    assert record.rfc3339(1795556015.4459999) == "2026-11-24T21:33:35.446Z"
    assert record.rfc3339(datetime.fromisoformat(har).timestamp()) == "2026-11-24T21:33:35.446Z"
    assert record.address(("192.0.2.1", 80)) == "192.0.2.1:80"
    assert record.address(("::1", 443, 0, 0)) == "[::1]:443"
    assert record.address(None) == ""


def test_encode_json_is_compact_ascii_json() -> None:
    value = {
        "before": '/caf\u00e9/\udcff\x01"\\',  # non-ASCII, a raw byte, a control, quote, backslash
        "after": None,
        "edits": [{"start": 0, "truncated": True, "x": 1.5}],
        "findings": [],
    }
    line = record.encode_json(value)
    assert line == json.dumps(value, separators=(",", ":")) and line.isascii()
    assert json.loads(line) == value


PIECES = ["\udcff", "\x01", '"', "\\", "é", "%", "%2f", "%00", "/../", "?a=%41", "#x"]
TEXT = st.lists(st.characters(codec="utf-8").map(str) | st.sampled_from(PIECES), max_size=20).map(
    "".join
)


@given(
    target=TEXT,
    profile=st.sampled_from([None, "rfc3986", "crawler"]),
    host=st.one_of(st.none(), TEXT),
    action=st.sampled_from(record.ACTIONS),
    fields=st.dictionaries(st.sampled_from(["ts", "client", "method", "http_version"]), TEXT),
    refused=st.booleans(),
)
@example(target="/a%2fb/%00", profile="rfc3986", host="h", action="rewritten", fields={},
         refused=False)  # fmt: skip
@example(target="/" + "é" * 9000, profile=None, host=None, action="rewritten", fields={},
         refused=False)  # fmt: skip
def test_encode_record_writes_what_encode_json_writes(
    target: str,
    profile: str | None,
    host: str | None,
    action: str,
    fields: dict[str, str],
    refused: bool,
) -> None:
    # The hot path's encoder for the records build() makes, and whatever else reaches it (a
    # refused record's reason, a cut one, edits capped): the same line as the C JSON encoder.
    result = canonicalize(target)
    extra: dict[str, Any] = (
        {"reason": "no", "rejected_by": "strict", "after": None} if refused else {}
    )
    rec = build(result, profile=profile, host=host, action=action, **fields, **extra)
    for shape in (rec, record.limit_text(record.limit_edits(rec))):
        assert record.encode_record(shape) == record.encode_json(shape)


def test_encode_record_leaves_other_values_to_encode_json() -> None:
    rec = build(canonicalize("/%7e"), profile="rfc3986")
    for key, value in (("ts", 1.5), ("host", 7), ("edits", [{"start": True}]), ("x", 1)):
        odd = {**rec, key: value}
        assert record.encode_record(odd) == record.encode_json(odd)
    odd = {**rec, "edits": [{**rec["edits"][0], "start": 1.0}]}  # a number that is no int
    assert record.encode_record(odd) == record.encode_json(odd)


@given(target=TEXT)
@example(target="/" + "a" * (record.MAX_TEXT + 1))
def test_unchanged_facts_are_the_facts_of_an_unchanged_target(target: str) -> None:
    full = record.facts(before=target, after=target, action="unchanged", edits=(), findings=())
    assert record.unchanged(target) == full


def test_severity_is_written_by_both_encoders() -> None:
    """Each finding's severity and the record's highest: the fast encoder writes what the JSON
    encoder writes, and a record read back from an older log (no severity) still encodes."""
    for target in ("/%252e%252e/x?a=%00", "/a/./b", "/a", "/a%2Fb?q=%e9", "/a/../b/../c"):
        rec = build(canonicalize(target, form="origin"), profile="rfc3986")
        fast = record.encode_record(rec)
        assert fast == record.encode_json(rec)
        findings = json.loads(fast)["findings"]
        assert all(f["severity"] for f in findings)
    rec = build(canonicalize("/%252e%252e/x?a=%00", form="origin"))
    assert rec["severity"] == "critical"
    old = {k: v for k, v in rec.items() if k != "severity"}
    old["findings"] = [{k: v for k, v in f.items() if k != "severity"} for f in rec["findings"]]
    assert record.encode_record(old) == record.encode_json(old)


def test_the_target_severity_and_its_reason() -> None:
    """What the worst reader makes of the target, beside the findings' own highest: a "//..//"
    that a merging reader climbs above the root with is critical though its finding is low; a
    DOI's "%2F" climbs nowhere and is low though its finding is medium."""
    rec = build(canonicalize("/.//..//etc/passwd", form="origin"))
    assert (rec["severity"], rec["target_severity"]) == ("low", "critical")
    assert "reaches above the root: /../etc/passwd" in rec["severity_reason"]
    doi = build(canonicalize("/chapter/10.1007%2F978-1-4471-6374-9_5", form="origin"))
    assert (doi["severity"], doi["target_severity"]) == ("medium", "low")
    assert record.encode_record(rec) == record.encode_json(rec)
    assert json.loads(record.encode_record(rec))["severity_reason"] == rec["severity_reason"]
    # the protected servers decide alone: tomcat refuses the climb above the root itself
    facts = record.facts(
        before="/files/../../etc/shadow", after=None, action="audited", edits=(),
        findings=canonicalize("/files/../../etc/shadow", form="origin").findings,
        servers=("tomcat",),
    )  # fmt: skip
    assert facts["target_severity"] == "low"
    assert "target_severity" not in build(canonicalize("/a"))


def test_every_occurrence_of_a_finding_is_recorded() -> None:
    rec = build(canonicalize("/a/../b/../c/./d", form="origin"))
    (dots,) = rec["findings"]
    assert dots["occurrences"] == 3 and dots["offsets"] == [3, 8, 13]
    assert json.loads(record.encode_record(rec))["findings"][0]["offsets"] == [3, 8, 13]
    (one,) = build(canonicalize("/a/./b", form="origin"))["findings"]
    assert "offsets" not in one  # one occurrence: it is at "offset"


def test_redaction_masks_an_escaped_secret_in_targets_and_edits() -> None:
    """A secret parameter whose name is %-escaped is masked in both targets, in an edit inside
    its value and in an edit that shows the whole query; edits that hold no value stay."""
    edit = {"rule": "decode-unreserved", "component": "query"}
    record = {
        "before": "/p?%74oken=abc&q=%7e",
        "after": "/p?token=abc&q=~",
        "edits": [
            {**edit, "start": 3, "end": 6, "before": "%74", "after": "t"},
            {**edit, "start": 11, "end": 12, "before": "a", "after": "A"},
            {**edit, "start": 15, "end": 18, "before": "%7e", "after": "~"},
            {**edit, "rule": "sort-query", "start": 3, "end": 20,
             "before": "%74oken=abc&q=%7e", "after": "token=abc&q=~"},
        ],
    }  # fmt: skip
    out = REDACTOR.record(record)
    assert out["before"] == "/p?%74oken=***&q=%7e"
    assert out["after"] == "/p?token=***&q=~"
    assert [(e["before"], e["after"]) for e in out["edits"]] == [
        ("%74", "t"),
        ("***", "***"),
        ("%7e", "~"),
        ("%74oken=***&q=%7e", "token=***&q=~"),
    ]
    assert record["before"] == "/p?%74oken=abc&q=%7e"  # a copy: the flow's facts keep theirs
