#!/usr/bin/env bash
# Regenerates the Python protobuf and gRPC modules (dedup/v1/*_pb2*.py) from
# the repository's proto/dedup/v1/*.proto, the one source of truth.
#
#   client/python/generate.sh          rewrite the committed modules
#   client/python/generate.sh --check  fail if they differ from the protos
#
# It needs Debian's python3-grpc-tools (grpc_tools.protoc); the generated
# code is committed so that users of the client need only python3-grpcio.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
PYTHON="${PYTHON:-/usr/bin/python3}"

generate() { # generate OUTDIR
  mkdir -p "$1"
  (cd "$root/proto" && "$PYTHON" -m grpc_tools.protoc -I. \
    --python_out="$1" --grpc_python_out="$1" dedup/v1/*.proto google/rpc/status.proto)
  touch "$1/dedup/__init__.py" "$1/dedup/v1/__init__.py"
  # google/ stays a namespace package (no __init__.py), so that protobuf's
  # own google.protobuf is still found beside this google.rpc.
  rm -f "$1/google/rpc/status_pb2_grpc.py"
}

if [ "${1:-}" = "--check" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  generate "$tmp"
  if ! diff -r -x __pycache__ "$tmp/dedup" "$here/dedup" || ! diff -r -x __pycache__ "$tmp/google" "$here/google"; then
    echo "client/python/dedup differs from proto/; run client/python/generate.sh and commit" >&2
    exit 1
  fi
else
  rm -rf "$here/dedup" "$here/google"
  generate "$here"
fi
