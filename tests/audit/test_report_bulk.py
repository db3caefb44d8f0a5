"""`Summary.read` counts plain records by the block (`urlsan.audit.bulk`): held to a reference
that reads every line with ``json.loads``, on generated logs (records as the writer writes them
and as others might, malformed lines, torn last lines, escapes, unicode, gzip) and every block
size, down to lines longer than a block; with the compiled scanner (audit/_bulk.c) and with the
regular expression that stands in for it where it is not built."""

from __future__ import annotations

import gzip
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from urlsan.audit import bulk
from urlsan.audit import summary as summary_module
from urlsan.audit.record import ACTIONS, encode_json, encode_record
from urlsan.audit.report import Summary, render_html, render_text
from urlsan.audit.sources import open_source


@pytest.fixture(autouse=True, params=["compiled", "regex"])
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: with the compiled scanner, and with the regular expression."""
    if request.param == "regex":
        monkeypatch.setattr(bulk, "_compiled", None)
    elif bulk._compiled is None:
        pytest.skip("audit/_bulk.c is not built")
    return str(request.param)


def reference(data: bytes, name: str = "f", **options: Any) -> Summary:
    """What `Summary.read` did before blocks: ``json.loads`` on every line, in order."""
    s = Summary(**options)
    s.sources.append(name)
    records = foreign = number = 0
    for number, raw in enumerate(io.BytesIO(data), 1):
        s.lines += 1
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or "action" not in record:
                raise ValueError("not an audit record")
        except ValueError:
            if not raw.endswith(b"\n") and line.startswith(b"{") and line.isascii():
                s.incomplete += 1
            else:
                foreign += 1
                s._malformed(f"{name}:{number}")
            continue
        records += 1
        s.add(record)
    if foreign > records:
        s.not_audit_logs.append((name, number, foreign, records))
    return s


def read(data: bytes, **options: Any) -> Summary:
    s = Summary(**options)
    s.read(io.BytesIO(data), "f")
    return s


def assert_same(got: Summary, want: Summary) -> None:
    assert got.as_dict() == want.as_dict()
    assert list(got.actions.items()) == list(want.actions.items())  # ties: first seen first
    assert list(got.rules.items()) == list(want.rules.items())
    assert (got.lines, got.incomplete, got.not_audit_logs, got.with_status) == (
        want.lines,
        want.incomplete,
        want.not_audit_logs,
        want.with_status,
    )
    assert render_text(got) == render_text(want)
    assert render_html(got) == render_html(want)


START = datetime(2026, 11, 22, 4, 0, 0, tzinfo=UTC)
RULES = ("lowercase-host", "decode-unreserved", "drop-default-port", "a+b", "remove-dot-segments")
text = st.one_of(
    st.sampled_from(["", "/a", "x", "é", 'q"uote', "back\\slash", "\x01", "\ud800", "a:b"]),
    st.text(max_size=8),
)


@st.composite
def times(draw: Any) -> Any:
    seconds = draw(st.sampled_from([0, 1, 59, 61, 3599, 7300, 86400 * 3, 86400 * 40]))
    millis = draw(st.integers(0, 999))
    ts = (START + timedelta(seconds=seconds, milliseconds=millis)).strftime("%Y-%m-%dT%H:%M:%S.%f")[
        :-3
    ]
    return draw(
        st.sampled_from(
            [
                ts + "Z",  # as urlsan writes it
                ts + "+02:00",
                ts[:19] + "Z",
                "2026-02-30T00:00:00.000Z",  # no such day
                "2026-11-22T24:00:00.000Z",
                None,
                7,
            ]
        )
    )


def edits(draw: Any) -> list[Any]:
    rules = draw(st.lists(st.sampled_from(RULES), max_size=4))
    out: list[Any] = [
        {"rule": r, "component": "path", "start": 0, "end": 2, "before": draw(text), "after": "b"}
        for r in rules
    ]
    if draw(st.integers(0, 20)) == 0:
        out.append("not an edit")
    return out


FINDING = {"rule": "dot-segment", "component": "path", "offset": 1, "detail": "..",
           "occurrences": 1, "severity": "low"}  # fmt: skip


FINDING_AGAIN = {"rule": "backslash", "component": "query", "offset": 4, "detail": "\\",
                 "occurrences": 3, "offsets": [4, 9, 12], "severity": "medium"}  # fmt: skip
CLIENTS = ["10.0.0.1:5", "10.0.0.2", "[::1]:80", "::1", "", "a[b:1", ":80", None, "10.0.0.1:"]


@st.composite
def records(draw: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "ts": draw(times()),
        "client": draw(st.sampled_from(CLIENTS)),
        "method": "GET",
        "scheme": draw(st.sampled_from(["http", "https", "HTTP", "", None])),
        "host": draw(st.sampled_from(["a.test", "A.test:80", "a.test:443", "", None, "é.test"])),
        "http_version": "HTTP/1.1",
    }
    if draw(st.booleans()):
        record["profile"] = "rfc3986"
    record["before"] = draw(text)
    record["after"] = draw(st.one_of(st.none(), text))
    record["action"] = draw(st.sampled_from([*ACTIONS, "", "other"]))
    record["edits"] = edits(draw)
    record["findings"] = [FINDING] if draw(st.integers(0, 5)) == 0 else []
    if draw(st.integers(0, 7)) == 0:
        record["findings"] = [FINDING, FINDING_AGAIN]
        record["target_severity"] = draw(st.sampled_from(["high", "info", "", "other"]))
        record["severity_reason"] = draw(text)
    if record["findings"]:
        record["severity"] = "low"
    if record["action"] == "rejected":
        record["reason"] = draw(text)
        record["rejected_by"] = "limit"
    if draw(st.integers(0, 10)) == 0:
        record["backends"] = [{"server": "nginx", "path": "/a", "rfc": "/b", "climbs": True}]
    record["status"] = draw(st.sampled_from([200, 404, None, "200", 200.0, -0, 10**30]))
    return record


@st.composite
def lines(draw: Any) -> bytes:
    record = draw(records())
    how = draw(st.integers(0, 9))
    if how < 6:
        return (encode_record(record) + "\n").encode()  # as urlsan writes it
    if how == 6:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
    if how == 7:
        return (encode_json({"action": "x", **record}) + "\r\n").encode()
    return draw(
        st.sampled_from(
            [
                b"\n",
                b"   \n",
                b"not json\n",
                b"[1, 2]\n",
                b'{"no": "action"}\n',
                b'{"action": "rewritten", "action": "rejected"}\n',
                b'{"ts":"2026-11-22T04:00:00.000Z","action":"x\x01"}\n',
                b'{"action":"audited","status":' + b"1" * 5000 + b"}\n",
                b'{"action":"audited","before":"\\x"}\n',
                b"\xff\xfe\n",
                b'{"action":"\xc3\xa9"}\n',
            ]
        )
    )


@st.composite
def logs(draw: Any) -> bytes:
    data = b"".join(draw(st.lists(lines(), max_size=30)))
    tail = draw(st.sampled_from([b"", b'{"ts":"2026-11-22T04:00', b"x", b'{"action":"a"}']))
    return data + tail


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 23])
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=logs(), min_severity=st.sampled_from(["info", "medium"]))
def test_blocks_count_as_json_loads_does(
    block: int, data: bytes, min_severity: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(summary_module, "_BLOCK", block)
    assert_same(read(data, min_severity=min_severity), reference(data, min_severity=min_severity))


def test_plain_records_of_many_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of written records across blocks, days and actions: the first of equal counts
    listed first, as the lines put them."""
    monkeypatch.setattr(summary_module, "_BLOCK", 4096)
    out = []
    for i in range(3000):
        ts = (START + timedelta(seconds=37 * i * (1 + i // 1000))).isoformat()[:19] + ".125Z"
        record = {
            "ts": ts, "client": f"10.0.{i % 7}.1:{i}", "method": "GET", "scheme": "http",
            "host": f"h{i % 13}.test", "http_version": "HTTP/1.1", "before": "/", "after": "/",
            "action": ("unchanged", "rewritten", "rejected")[i % 3] if i > 5 else "audited",
            "edits": [{"rule": RULES[i % 5], "component": "host", "start": 0, "end": 1,
                       "before": "A", "after": "a"}] if i % 4 else [],
            "findings": [FINDING] if i % 97 == 0 else [], "status": 200 if i % 5 else None,
        }  # fmt: skip
        out.append(encode_record(record) + "\n")
    data = "".join(out).encode()
    assert_same(read(data), reference(data))
    assert_same(read(data, top=3, findings_by="count"), reference(data, top=3, findings_by="count"))


def test_gzip(tmp_path: Any) -> None:
    record = {
        "ts": "2026-11-22T04:00:00.000Z", "client": "10.0.0.1:1", "method": "GET",
        "scheme": "http", "host": "a.test", "http_version": "HTTP/1.1", "before": "/",
        "after": "/", "action": "audited", "edits": [], "findings": [], "status": 200,
    }  # fmt: skip
    data = (encode_record(record) + "\n").encode() * 1000
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(data))
    s = Summary()
    with open_source(str(path)) as stream:
        s.read(stream, "f")
    assert_same(s, reference(data))


def _outcome(read: Any, line: bytes) -> tuple[str, Any]:
    try:
        return "value", read(line)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError both are
        return "error", type(e).__name__


@given(
    st.one_of(
        st.binary(min_size=1, max_size=12).map(lambda b: b"{" + b),
        st.binary(min_size=1, max_size=12),
        st.dictionaries(st.text(max_size=4), st.text(max_size=4)).map(
            lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass")
        ),
    )
)
def test_a_line_other_than_a_plain_record_reads_as_json_loads_reads_it(line: bytes) -> None:
    """The lines the scanner leaves over are read as ``json.loads`` reads them: the same value,
    or an error where it fails (a NUL after "{", bytes that are no UTF-8, lone surrogates)."""
    assert _outcome(summary_module._loads, line) == _outcome(json.loads, line)
