#!/usr/bin/env bash
# Runs the Go, Python and Node walkthroughs against one dedupd on a fresh
# embedded store: the README's promise that each language can claim,
# complete, replay, detect a conflict and reconcile a crashed claim.
# DEDUPD_BIN names a built dedupd; otherwise one is built. DEDUPD_PYTHON
# names a Python with the dedupd package installed; otherwise client/python
# is installed into a fresh virtual environment, as its README says.
set -euo pipefail
cd "$(dirname "$0")/../.."
work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
bin="${DEDUPD_BIN:-}"
if [ -z "$bin" ]; then
  go build -o "$work/dedupd" ./cmd/dedupd
  bin="$work/dedupd"
fi
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --log-format json 2>"$work/log" &
pid=$!
for _ in $(seq 1 100); do
  addr="$(grep -o '"msg":"dedupd serving"[^}]*"listen":"[^"]*"' "$work/log" | sed 's/.*"listen":"\([^"]*\)"/\1/' || true)"
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { cat "$work/log"; echo "dedupd did not start"; exit 1; }
export DEDUPD_ADDR="$addr"
echo "-- Go";     go run ./examples/walkthrough
python="${DEDUPD_PYTHON:-}"
if [ -z "$python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$work/venv"
  "$work/venv/bin/pip" install --quiet --no-deps --no-build-isolation ./client/python
  python="$work/venv/bin/python"
fi
echo "-- Python"; "$python" examples/walkthrough/walkthrough.py
echo "-- Node";   node examples/walkthrough/walkthrough.js
