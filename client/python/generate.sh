#!/usr/bin/env bash
# Regenerates the Python protobuf and gRPC modules and their type stubs
# (src/dedupd/_proto/dedup/v1/*_pb2*.py and .pyi) from the repository's
# proto/dedup/v1/*.proto, the one source of truth.
#
#   client/python/generate.sh          rewrite the committed modules
#   client/python/generate.sh --check  fail if they differ from the protos
#
# It needs Debian's python3-grpc-tools (grpc_tools.protoc) and mypy-protobuf
# (protoc-gen-mypy, protoc-gen-mypy_grpc); the generated code is committed so
# that users of the client need only python3-grpcio and python3-protobuf.
# The committed text comes from Debian 12's python3-grpc-tools 1.14 (protoc
# 3.5.1) and mypy-protobuf 3.2.0; other versions write other text, which
# --check reports as a difference.
#
# protoc names modules after the proto package, so the code it writes
# imports "dedup.v1". The modules live inside the dedupd package instead
# (dedupd._proto.dedup.v1), so that installing the client adds no top-level
# "dedup" package that could clash with another copy of the same protos.
# rewrite_imports points those imports at the package's own copy; the proto
# file names and message names in the descriptors stay dedup/v1/*.proto and
# dedup.v1.*, so the wire format and type URLs are unchanged.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
PYTHON="${PYTHON:-/usr/bin/python3}"
rel=src/dedupd/_proto # where the generated tree lives, under client/python

rewrite_imports() { # rewrite_imports DIR
  # "from dedup.v1 import x" and "import dedup.v1.x_pb2" (stubs, which also
  # name types as dedup.v1.x_pb2.Record). The character before "dedup" must
  # not be a dot or a name character, so a second run changes nothing.
  find "$1" -name '*.py' -o -name '*.pyi' | LC_ALL=C sort | while read -r f; do
    sed -E -i \
      -e 's/^from dedup\.v1 import /from dedupd._proto.dedup.v1 import /' \
      -e 's/(^|[^._[:alnum:]])dedup\.v1\.([[:alnum:]_]+_pb2(_grpc)?)\b/\1dedupd._proto.dedup.v1.\2/g' \
      -e 's/^from google\.rpc import /from dedupd._proto.google.rpc import /' \
      -e 's/(^|[^._[:alnum:]])google\.rpc\.status_pb2\b/\1dedupd._proto.google.rpc.status_pb2/g' \
      "$f"
  done
}

generate() { # generate OUTDIR (the directory that becomes _proto)
  mkdir -p "$1"
  (cd "$root/proto" && "$PYTHON" -m grpc_tools.protoc -I. \
    --python_out="$1" --grpc_python_out="$1" \
    --mypy_out="$1" --mypy_grpc_out="$1" dedup/v1/*.proto google/rpc/status.proto) \
    2> >(grep -v "^Writing mypy to " >&2)
  rewrite_imports "$1"
  printf '"""Generated protobuf and gRPC modules of dedup.v1 (see generate.sh)."""\n' >"$1/__init__.py"
  : >"$1/dedup/__init__.py"
  : >"$1/dedup/v1/__init__.py"
  # google.rpc.Status (proto/google/rpc/status.proto) lives inside the
  # package too, so that it never shadows an installed googleapis package.
  : >"$1/google/__init__.py"
  : >"$1/google/rpc/__init__.py"
  rm -f "$1/google/rpc/status_pb2_grpc.py" "$1/google/rpc/status_pb2_grpc.pyi"
}

if [ "${1:-}" = "--check" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  generate "$tmp/_proto"
  if ! diff -r -x __pycache__ "$tmp/_proto" "$here/$rel"; then
    echo "client/python/$rel differs from proto/; run client/python/generate.sh and commit" >&2
    exit 1
  fi
else
  rm -rf "${here:?}/$rel"
  generate "$here/$rel"
fi
