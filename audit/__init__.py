"""urlsan.audit — the audit record, its fault-tolerant JSON Lines writer, redaction, the readers of
recorded traffic, and the report.

Written by the addon and by ``urlsan audit``, read by ``urlsan report``; no mitmproxy here (but
for the flow-file reader, which imports it only when it reads one).

    record.py   the record: actions and caps (`ACTIONS`, `MAX_EDITS`, `MAX_TEXT`), `build` (one
                record from a canonicalization `Result`) and `serialize` (capped, redacted line)
    redact.py   `Redactor`: secrets masked before a record is written
    log.py      `AuditLog`: one append-only JSON Lines file, each fault reported once
    traffic.py  `Request` and `Unreadable`: what recorded traffic becomes; the decision reads it
    sources.py  recorded traffic as requests: mitmproxy flow files, HAR, combined access logs
    archive.py  WARC files, CDX and CDXJ indexes as requests
    report.py   `Summary` and its text, JSON and HTML renderings
    bulk.py     the plain records of a block of log lines, matched and counted by column
"""
