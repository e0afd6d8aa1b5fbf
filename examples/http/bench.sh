#!/usr/bin/env bash
# What dedupd gateway adds to a request: the order API (no delay) straight
# and through the gateway, side by side in one run (examples/http/bench).
# Extra arguments go to the bench (-n, -c, -rounds, -replay).
set -euo pipefail
cd "$(dirname "$0")/../.."
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/dedupd" ./cmd/dedupd
go build -o "$work/orderapi" ./examples/http/orderapi
go build -o "$work/bench" ./examples/http/bench
start() {
  local name=$1 ready=$2; shift 2
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$ready" ] && break; sleep 0.1; done
  [ -s "$ready" ] || { cat "$work/$name.log"; exit 1; }
  addr=$(head -n 1 "$ready")
}
start dedupd "$work/d.ready" "$work/dedupd" serve --listen 127.0.0.1:0 --data-dir "$work/data" --ready-file "$work/d.ready" --log-level warn
dedupd=$addr; dpid=${pids[-1]}
start orderapi "$work/a.ready" "$work/orderapi" --ready-file "$work/a.ready"
api=$addr; apid=${pids[-1]}
start gateway "$work/g.ready" "$work/dedupd" gateway --listen 127.0.0.1:0 --upstream "http://$api" \
  --server "$dedupd" --consumer bench --ready-file "$work/g.ready" --log-level warn
gw=$addr; gpid=${pids[-1]}
"$work/bench" -direct "http://$api" -gateway "http://$gw" -pids "orderapi=$apid,gateway=$gpid,dedupd=$dpid" "$@"
