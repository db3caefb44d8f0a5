#!/usr/bin/env bash
# Audit only: requests are forwarded exactly as the client sent them, and the audit log records
# what urlsan *would* have changed (action "audited").  A way to see what canonicalization would
# do to your traffic before you let it.
#
#   examples/audit-only.sh                # the proxy, on 127.0.0.1:8080, until ^C
#   examples/audit-only.sh report         # then: audit-report.html and a summary on the terminal
set -euo pipefail
PORT="${PORT:-8080}"
LOG="${LOG:-urlsan-audit.jsonl}"
if [ "${1:-}" = "report" ]; then
  urlsan report --html -o audit-report.html "$LOG"
  exec urlsan report "$LOG"
fi
exec urlsan proxy --listen-port "$PORT" \
  --set urlsan_mode=audit \
  --set urlsan_log="$LOG" "$@"
