"""The audit record: its actions and the caps that keep one hostile request small.

One JSON object per touched request, written by the addon (`urlsan.addon`) and by
``urlsan audit``, read by ``urlsan report``.  Its fields (docs/audit-log.md):
``ts``, ``client``, ``method``, ``host``, ``action``, ``before``, ``after``, ``profile``,
``edits`` and ``findings``; ``reason`` and ``rejected_by`` (the rule or limit that refused) for a
refused target; ``edits_truncated`` / ``truncated`` when a cap cut it.
`build` makes one from a `Result`, and `serialize` turns it into the line that is written.

Caps, so that one hostile request can neither write megabytes nor stall the proxy: a record holds
the first `MAX_EDITS` (100) edits, and ``"edits_truncated": <number dropped>`` when there were
more; a string longer than `MAX_TEXT` (8192 characters) is cut to that length (after redaction,
so a secret is never half-masked), and the record, edit or finding that held it gets
``"truncated": true``.
"""

from __future__ import annotations

import json
import json.encoder
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from ..core import Edit, Finding
from ..core.severity import assess
from ..core.taxonomy import rank
from .redact import Redactor

MAX_EDITS = 100  # edits kept per record
MAX_TEXT = 8192  # characters kept per string

# What the proxy did with a request, in the order reports list them.
ACTIONS = (
    "rewritten",
    "audited",
    "rejected",
    "redirected",
    "skipped-signed",
    "skipped-oversize",
    "unchanged",
)
# The actions whose record shows a target that was (or, audited, would have been) changed.
CHANGING = frozenset({"rewritten", "audited", "redirected"})


def limit_edits(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with at most `MAX_EDITS` edits, counting the others in ``edits_truncated``."""
    edits = record.get("edits")
    if not isinstance(edits, list) or len(edits) <= MAX_EDITS:
        return record
    out = dict(record)
    out["edits"] = edits[:MAX_EDITS]
    out["edits_truncated"] = int(record.get("edits_truncated") or 0) + len(edits) - MAX_EDITS
    return out


def _cut(obj: dict[str, Any]) -> dict[str, Any]:
    long = [k for k, v in obj.items() if isinstance(v, str) and len(v) > MAX_TEXT]
    if not long:
        return obj
    out = dict(obj)
    for k in long:
        out[k] = out[k][:MAX_TEXT]
    out["truncated"] = True
    return out


def limit_text(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every string cut to `MAX_TEXT`, each object cut marked ``truncated``."""
    out = _cut(record)
    for key in ("edits", "findings"):
        items = out.get(key)
        if isinstance(items, list):
            cut = [_cut(x) if isinstance(x, dict) else x for x in items]
            if any(a is not b for a, b in zip(cut, items, strict=True)):
                out = out if out is not record else dict(record)
                out[key] = cut
    return out


def rfc3339(seconds: float) -> str:
    """``seconds`` since the epoch as the record's ``ts``: RFC 3339 UTC, milliseconds.

    Rounded to the microsecond first, as `datetime.fromtimestamp` rounds (and so a HAR export's
    ``startedDateTime``), then cut to the millisecond: a flow's 35.4459999 s and its HAR entry's
    35.446000 s are one time, not 35.445 and 35.446."""
    return _format(round(seconds * 1_000_000) // 1000)


def now() -> str:
    """The current time as `rfc3339` writes it: the ``ts`` of a record the proxy writes."""
    return _format(round(time.time() * 1_000_000) // 1000)


_second: list[Any] = [-1, ""]  # the last whole second and its formatted prefix
_milli: list[Any] = [-1, ""]  # the last millisecond and its formatted time


def _format(millis: int) -> str:
    """Milliseconds since the epoch as RFC 3339 UTC; a busy proxy writes several records per
    millisecond, and many per second, so the last of each is kept."""
    if millis != _milli[0]:
        whole, part = divmod(millis, 1000)
        if whole != _second[0]:
            _second[:] = [whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))]
        _milli[:] = [millis, f"{_second[1]}.{part:03d}Z"]
    text: str = _milli[1]
    return text


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 / ISO 8601 time (a record's ``ts``, a HAR ``startedDateTime``) in UTC; a
    time without a zone is taken as UTC; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def facts(
    *,
    before: str,
    after: str | None,
    action: str,
    edits: Sequence[Edit],
    findings: Sequence[Finding],
    edits_total: int | None = None,
    reason: str = "",
    rejected_by: str = "",
    backends: Sequence[dict[str, Any]] = (),
    servers: Sequence[str] = (),
) -> dict[str, Any]:
    """What urlsan did with one target: the part of the record the addon also keeps in
    ``flow.metadata["urlsan"]``, so it is built once and is as small as the record.

    ``before`` is the request-target as received, ``after`` the canonical one (None when it was
    refused: rejected, or audited with ``rejected_by``).  ``edits`` are the target's then the
    Host's; at most `MAX_EDITS` become dicts, and ``edits_truncated`` counts the others, out of
    ``edits_total`` when the caller already kept only the first.  ``before`` and ``after`` are
    cut to `MAX_TEXT` (``"truncated": true``): a megabyte target is not held twice per flow.
    With findings, the target's severity and its reason (`urlsan.core.severity.assess`, the
    protected ``servers`` deciding alone when named) become ``target_severity`` and
    ``severity_reason``.
    """
    out: dict[str, Any] = {"before": before, "after": after, "action": action}
    # Only the kept edits become dicts: a 100 KB target can carry 100,000 of them.
    kept = edits if len(edits) <= MAX_EDITS else edits[:MAX_EDITS]
    out["edits"] = _edit_dicts(kept) if kept else []
    total = len(edits) if edits_total is None else max(edits_total, len(edits))
    if total > len(kept):
        out["edits_truncated"] = total - len(kept)
    if findings:
        dicts = [_finding_dict(f) for f in findings]
        out["findings"] = dicts
        # each finding's severity as its dict holds it: `Finding.severity` computes it per call
        out["severity"] = max([d["severity"] for d in dicts], key=rank)
        target = assess(before, findings, servers)  # what the readers make of it, and why
        if target is not None:
            out["target_severity"] = target.level
            out["severity_reason"] = target.reason
    else:
        out["findings"] = []
    if reason:
        out["reason"] = reason
    if rejected_by:
        out["rejected_by"] = rejected_by
    if backends:  # the protected servers that read the target otherwise, and their reading
        out["backends"] = list(backends)
    if len(before) > MAX_TEXT or (after is not None and len(after) > MAX_TEXT):
        out["before"] = before[:MAX_TEXT]
        out["after"] = None if after is None else after[:MAX_TEXT]
        out["truncated"] = True
    return out


def unchanged(target: str) -> dict[str, Any]:
    """``facts`` of a target urlsan left as it was and found nothing in: most requests, so it
    is built without `facts`'s work."""
    if len(target) > MAX_TEXT:
        return facts(before=target, after=target, action="unchanged", edits=(), findings=())
    return {"before": target, "after": target, "action": "unchanged", "edits": [], "findings": []}


def build(
    *,
    ts: str,
    client: str,
    method: str,
    scheme: str,
    host: str | None,
    http_version: str,
    profile: str | None = None,
    facts_: dict[str, Any] | None = None,
    status: int | None = None,
    **what: Any,
) -> dict[str, Any]:
    """The audit record of one request, as the proxy and ``urlsan audit`` both write it: who
    asked for what, then `facts` (given built as ``facts_``, or as `facts`'s arguments).
    ``profile`` is written when given; ``status`` always, last: the response's status code, or
    None when no response came.  Secrets are masked and long strings cut by `serialize` (or
    `AuditLog.write`)."""
    if facts_ is None:
        facts_ = facts(**what)
    if profile is None:
        return {
            "ts": ts, "client": client, "method": method, "scheme": scheme, "host": host,
            "http_version": http_version, **facts_, "status": status,
        }  # fmt: skip
    return {
        "ts": ts, "client": client, "method": method, "scheme": scheme, "host": host,
        "http_version": http_version, "profile": profile, **facts_, "status": status,
    }  # fmt: skip


def _edit_dicts(edits: Sequence[Edit]) -> list[dict[str, Any]]:
    """``[e.as_dict() for e in edits]``, each built as a literal: three times as fast, and done
    for every edit logged."""
    return [
        {
            "rule": e.rule,
            "component": e.component,
            "start": e.start,
            "end": e.end,
            "before": e.before,
            "after": e.after,
        }
        if len(e.before) <= MAX_TEXT >= len(e.after)
        else _cut_edit_dict(e)
        for e in edits
    ]


def _cut_edit_dict(e: Edit) -> dict[str, Any]:
    """An edit core folded (thousands of rewrites in one component) can span the whole target:
    its texts are cut to `MAX_TEXT` too, and it is marked ``truncated``."""
    return {
        "rule": e.rule, "component": e.component, "start": e.start, "end": e.end,
        "before": e.before[:MAX_TEXT], "after": e.after[:MAX_TEXT], "truncated": True,
    }  # fmt: skip


def _finding_dict(f: Finding) -> dict[str, Any]:
    """A finding as the record holds it, built as a literal, like `_edit_dicts`: its fields,
    ``offsets`` only when it occurred more than once, and its severity."""
    out = {
        "rule": f.rule,
        "component": f.component,
        "offset": f.offset,
        "detail": f.detail,
        "occurrences": f.occurrences,
    }
    if f.offsets:
        out["offsets"] = list(f.offsets)
    out["severity"] = f.severity
    return out


def address(peer: Sequence[Any] | None) -> str:
    """A socket address as the record's ``client``: ``ip:port``, ``[ip]:port`` for IPv6."""
    if not peer:
        return ""
    ip, port = str(peer[0]), peer[1]
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _json_encoder() -> Callable[[Any], str]:
    """``json.dumps(o, separators=(",", ":"))``: compact, ASCII only (``ensure_ascii``: the
    file is plain ASCII, and a raw byte's ``\\udcXX`` escape survives), without the circular
    check (a record is a tree) and without building an encoder per call as ``dumps`` does: a
    quarter cheaper on the proxy's hot path.  Python's own encoder where ``_json`` is missing."""
    plain = json.JSONEncoder(separators=(",", ":"))
    make = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed
    if make is None:  # pragma: no cover - CPython always has _json
        return plain.encode
    chunks = make(None, plain.default, json.encoder.encode_basestring_ascii, None, ":", ",",
                  False, False, True)  # fmt: skip
    join = "".join
    return lambda o: join(chunks(o, 0))


encode_json = _json_encoder()


class _Unusual(Exception):
    """A record `encode_record` leaves to `encode_json`."""


def encode_record(record: dict[str, Any]) -> str:
    """``encode_json(record)``, several times faster for the records `build` makes on the
    proxy's hot path (issue #14): their keys are known, so only the values are encoded, strings
    by the C encoder's own escaping (``ensure_ascii``).  Any other record (a cut one, a rejected
    one, one read back from a file) is left to `encode_json`; tests hold both to the same text.
    """
    try:
        return _encode_known(record)
    except (_Unusual, KeyError, TypeError, ValueError):
        return encode_json(record)


def _encode_known(record: dict[str, Any]) -> str:
    # KeyError for a missing key, _Unusual for one more, TypeError for a value that is not text
    # where text belongs, ValueError for a number that is no int.
    profile = record.get("profile")
    severity = record.get("severity")  # the highest of the findings', with findings only
    target = record.get("target_severity")  # with severity_reason, with findings only
    if len(record) != 12 + (profile is not None) + (severity is not None) + 2 * (
        target is not None
    ):
        raise _Unusual
    host, after, status = record["host"], record["after"], record["status"]
    return (
        f'{{"ts":{_quote(record["ts"])},"client":{_quote(record["client"])},'
        f'"method":{_quote(record["method"])},"scheme":{_quote(record["scheme"])},'
        f'"host":{"null" if host is None else _quote(host)},'
        f'"http_version":{_quote(record["http_version"])},'
        f"{'' if profile is None else _profile(profile)}"
        f'"before":{_quote(record["before"])},'
        f'"after":{"null" if after is None else _quote(after)},'
        f'"action":{_quote(record["action"])},"edits":[{_edits(record["edits"])}],'
        f'"findings":[{_findings(record["findings"])}],'
        f"{'' if severity is None else _severity(severity)}"
        f"{'' if target is None else _target(target, record['severity_reason'])}"
        f'"status":{"null" if status is None else format(status, "d")}}}'
    )


_quote = json.encoder.encode_basestring_ascii


def _profile(profile: str) -> str:
    return f'"profile":{_quote(profile)},'


def _severity(severity: str) -> str:
    return f'"severity":{_quote(severity)},'


def _target(severity: str, reason: str) -> str:
    return f'"target_severity":{_quote(severity)},"severity_reason":{_quote(reason)},'


def _edits(edits: list[dict[str, Any]]) -> str:
    out = []
    for e in edits:
        if len(e) != 6:  # rule, component, start, end, before, after; not a cut edit
            raise _Unusual
        out.append(
            f'{{"rule":{_quote(e["rule"])},"component":{_quote(e["component"])},'
            f'"start":{e["start"]:d},"end":{e["end"]:d},'
            f'"before":{_quote(e["before"])},"after":{_quote(e["after"])}}}'
        )
    return ",".join(out)


def _findings(findings: list[dict[str, Any]]) -> str:
    out = []
    for f in findings:
        offsets = f.get("offsets")  # with more than one occurrence
        if len(f) != (6 if offsets is None else 7):  # and rule, ..., occurrences, severity
            raise _Unusual
        where = (
            "" if offsets is None else f'"offsets":[{",".join(format(o, "d") for o in offsets)}],'
        )
        out.append(
            f'{{"rule":{_quote(f["rule"])},"component":{_quote(f["component"])},'
            f'"offset":{f["offset"]:d},"detail":{_quote(f["detail"])},'
            f'"occurrences":{f["occurrences"]:d},{where}"severity":{_quote(f["severity"])}}}'
        )
    return ",".join(out)


def serialize(record: dict[str, Any], redactor: Redactor) -> bytes:
    """One audit-log line: ``record`` capped, its secrets masked, as ASCII JSON and a newline.

    What `AuditLog.write` appends, and what other writers (`urlsan audit -o -`) write.
    """
    edits = record.get("edits")
    if isinstance(edits, list) and len(edits) > MAX_EDITS:  # `limit_edits`'s test, in line
        record = limit_edits(record)
    record = redactor.record(record)
    text = encode_record(record)
    if len(text) > MAX_TEXT:  # else no string in it can be longer (the fast path)
        limited = limit_text(record)  # escapes (\u0001) make a line longer than its strings
        if limited is not record:
            text = encode_json(limited)
    return (text + "\n").encode("ascii")
