"""`urlsan report`: summarize audit logs as a terminal table, JSON, or one HTML page."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..audit import report
from ..audit.sources import gzip_cut, open_source
from ..core.taxonomy import SEVERITIES
from .argtypes import positive
from .status import EXIT_BAD_LINES, EXIT_OK, UsageError


def add_parser(sub: Any) -> None:
    report = sub.add_parser(
        "report",
        help="summarize an audit log written by the proxy or `urlsan audit`",
        description="Summarize audit logs (JSON Lines; gzip is detected) in one pass: counts "
        "per action, rule, host and client, targets by severity with the reason, findings by "
        "severity with the weaknesses they point at and the requests behind them, time range. "
        "An input that is not an audit log (most of its lines are not audit records) is refused "
        "with exit status 3.",
    )
    report.add_argument("logs", nargs="+", metavar="AUDIT.jsonl", help="audit log(s); '-': stdin")
    fmt = report.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="the summary as one JSON document")
    fmt.add_argument("--html", action="store_true", help="one self-contained HTML page with charts")
    report.add_argument(
        "-o", "--output", metavar="FILE", default="-", help="write to FILE (default: stdout)"
    )
    report.add_argument(
        "--top",
        type=positive,
        default=10,
        metavar="N",
        help="rows in the host, client and finding tables (default: 10)",
    )
    report.add_argument(
        "--min-severity",
        choices=SEVERITIES,
        default="info",
        help="leave findings below this severity out of the findings views, and targets below "
        "it (what the worst reader makes of them) out of the targets and suspicious requests "
        "(default: info, all)",
    )
    report.add_argument(
        "--findings-by",
        choices=("severity", "count"),
        default="severity",
        help="order of the findings: most severe first (default), or most frequent first",
    )
    report.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    summary = report.Summary(
        top=args.top, min_severity=args.min_severity, findings_by=args.findings_by
    )
    for path in args.logs:
        try:
            stream = open_source(path)
            try:
                summary.read(stream, path)
                cut = gzip_cut(stream)
                if cut is not None:  # a .gz cut short: what came before it is reported
                    sys.stderr.write(f"urlsan report: {path}: {cut}; the report stops there\n")
            finally:
                if stream is not sys.stdin.buffer:
                    stream.close()
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    if summary.not_audit_logs:
        # Nothing is reported: "0 requests" would read as a quiet proxy, not as the wrong file.
        for name, lines, foreign, records in summary.not_audit_logs:
            which = (
                f"none of its {lines:,} line{'s' * (lines != 1)} is an audit record"
                if not records
                else f"{foreign:,} of its {lines:,} lines are not audit records"
            )
            sys.stderr.write(
                f"urlsan report: {name} is not an audit log: {which} (JSON Lines written by the "
                "proxy's urlsan_log or `urlsan audit`; for recorded traffic, run `urlsan audit` "
                "on it first)\n"
            )
        return EXIT_BAD_LINES
    if args.json:
        text = json.dumps(summary.as_dict(), indent=2, ensure_ascii=False) + "\n"
    elif args.html:
        text = report.render_html(summary)
    else:
        text = report.render_text(summary)
    if args.output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    return EXIT_OK
