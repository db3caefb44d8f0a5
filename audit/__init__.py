"""urlsan.audit — the audit record, its fault-tolerant JSON Lines writer, redaction, and the report.

Written by the addon, read by ``urlsan report``; no mitmproxy here.

    record.py   the record's actions and caps (`ACTIONS`, `MAX_EDITS`, `MAX_TEXT`)
    redact.py   `Redactor`: secrets masked before a record is written
    log.py      `AuditLog`: one append-only JSON Lines file, each fault reported once
    report.py   `Summary` and its text, JSON and HTML renderings
"""
