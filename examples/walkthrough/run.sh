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
# --ready-file appears (whole) once dedupd serves; its first line is the
# address it bound.
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --ready-file "$work/ready" 2>"$work/log" &
pid=$!
for _ in $(seq 1 300); do
  [ -f "$work/ready" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -f "$work/ready" ] || { cat "$work/log"; echo "dedupd did not start"; exit 1; }
addr="$(head -n 1 "$work/ready")"
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
