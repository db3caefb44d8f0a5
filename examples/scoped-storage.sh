#!/usr/bin/env bash
# Scoping: canonicalize everything except the object stores, whose URLs must reach them byte for
# byte.  A presigned URL (S3, GCS, Azure SAS, CloudFront) signs the exact path and query: one
# decoded %7E and the signature no longer matches.
#
# urlsan_filter is a mitmproxy filter expression; urlsan only touches the flows it matches.
# urlsan also recognizes signed requests by their parameters and leaves them alone on its own
# (urlsan_signed=skip, action "skipped-signed"); the filter covers what no parameter gives away,
# such as a whole storage host.
#
#   examples/scoped-storage.sh
#   STORAGE='my-minio\.internal' examples/scoped-storage.sh
set -euo pipefail
PORT="${PORT:-8080}"
LOG="${LOG:-urlsan-audit.jsonl}"
STORAGE="${STORAGE:-s3[.a-z0-9-]*\.amazonaws\.com|storage\.googleapis\.com|blob\.core\.windows\.net}"
exec urlsan proxy --listen-port "$PORT" \
  --set urlsan_log="$LOG" \
  --set "urlsan_filter=!~d '$STORAGE'" "$@"
