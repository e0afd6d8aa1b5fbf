#!/usr/bin/env bash
# An order API made idempotent by `dedupd gateway`, its code unchanged.
# The API takes 2 s per order; the client is curl, which gives up after
# 1 s (--max-time: it drops the connection after sending) and retries
# (--retry). Straight to the API, that places several orders; through the
# gateway, with an Idempotency-Key, exactly one. Run by CI (.ci/run).
# DEDUPD_BIN names a built dedupd; otherwise one is built.
set -euo pipefail
cd "$(dirname "$0")/../.."
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
bin="${DEDUPD_BIN:-}"
if [ -z "$bin" ]; then
  go build -o "$work/dedupd" ./cmd/dedupd
  bin="$work/dedupd"
fi
go build -o "$work/orderapi" ./examples/http/orderapi

# start NAME READYFILE CMD...: runs CMD in the background, waits for its
# ready file, and sets addr to its first line, the address CMD bound.
start() {
  local name=$1 ready=$2; shift 2
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do
    [ -s "$ready" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  [ -s "$ready" ] || { cat "$work/$name.log"; echo "$name did not start"; exit 1; }
  addr=$(head -n 1 "$ready")
}

orders() { curl -s "http://$1/orders" | grep -o '"id":' | wc -l | tr -d ' '; }
place() { # place ADDR [curl args...]: one order, retried by curl after each 1 s timeout
  local addr=$1; shift
  curl -s -o "$work/out" -w '%{http_code}' --max-time 1 --retry 3 --retry-delay 1 --retry-max-time 30 \
    -H 'Content-Type: application/json' -d '{"sku":"book","qty":1}' "$@" "http://$addr/orders" || true
}

start dedupd "$work/dedupd.ready" "$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --ready-file "$work/dedupd.ready"
dedupd=$addr

echo "-- straight to the order API: curl times out and retries"
start direct "$work/direct.ready" "$work/orderapi" --delay 2s --ready-file "$work/direct.ready"
direct=$addr
place "$direct" >/dev/null
sleep 2.5 # let the API finish the last attempt
n=$(orders "$direct"); echo "orders placed: $n"
[ "$n" -gt 1 ] || { echo "expected the retries to place more than one order without the gateway"; exit 1; }

echo "-- through dedupd gateway, with an Idempotency-Key: the same client"
start orderapi "$work/api.ready" "$work/orderapi" --delay 2s --ready-file "$work/api.ready"
api=$addr
start gateway "$work/gw.ready" "$bin" gateway --listen 127.0.0.1:0 --upstream "http://$api" \
  --server "$dedupd" --consumer orders --ready-file "$work/gw.ready"
gw=$addr
code=$(place "$gw" -H "Idempotency-Key: order-$(date +%s%N)")
echo "last attempt: HTTP $code $(cat "$work/out")"
n=$(orders "$api"); echo "orders placed: $n"
[ "$code" = 201 ] && [ "$n" = 1 ] || { cat "$work/gateway.log"; echo "expected one order and a 201 through the gateway"; exit 1; }
echo "http example: ok"
