#!/usr/bin/env bash
# A local browsing proxy: every request-target your browser sends is canonicalized (RFC 3986,
# meaning kept) before it leaves your machine, and every rewrite goes to an audit log.
#
#   examples/browsing-proxy.sh            # listens on 127.0.0.1:8080
#   PORT=8888 LOG=~/urlsan.jsonl examples/browsing-proxy.sh
#
# Set the browser's HTTP and HTTPS proxy to 127.0.0.1:$PORT.  For HTTPS, visit http://mitm.it
# through the proxy once and trust mitmproxy's CA (docs/proxy.md, "HTTPS: install mitmproxy's CA").
# Stop with ^C, then:
#
#   urlsan report urlsan-audit.jsonl
#
# Any other mitmdump option can follow, e.g. `--set urlsan_profile=crawler`.
set -euo pipefail
PORT="${PORT:-8080}"
LOG="${LOG:-urlsan-audit.jsonl}"
exec urlsan proxy --listen-port "$PORT" --set urlsan_log="$LOG" "$@"
