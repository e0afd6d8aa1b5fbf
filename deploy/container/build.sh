#!/usr/bin/env bash
# Builds dedupd's image with buildah, offline: the binary is built here
# (static, stamped with the commit), staged with the host's CA bundle and an
# empty data directory, and copied into an image FROM scratch.
#
#   deploy/container/build.sh [TAG]      # default dedupd:dev
#
# Then, with an engine: podman run -p 7070:7070 -v dedupd:/var/lib/dedupd dedupd:dev
# (Docker: docker load from `buildah push dedupd:dev docker-archive:dedupd.tar`.)
set -euo pipefail
cd "$(dirname "$0")/../.."
tag=${1:-dedupd:dev}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
CGO_ENABLED=0 go build -buildvcs=true -trimpath -ldflags '-s -w' -o "$stage/dedupd" ./cmd/dedupd
cp /etc/ssl/certs/ca-certificates.crt "$stage/"
mkdir "$stage/data"
# --format docker keeps HEALTHCHECK (the OCI format has no such field).
buildah ${BUILDAH_FLAGS:-} bud --format docker -f deploy/container/Containerfile -t "$tag" "$stage"
