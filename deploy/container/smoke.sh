#!/usr/bin/env bash
# CI's check of the image that deploy/container/build.sh built: with no
# engine on these machines, it mounts the image's root filesystem, runs the
# binary there for --version, then serves from it as the image's user
# (chroot, uid 65532) on the image's own data directory and asks it for
# health with the image's own probe.
#
#   deploy/container/smoke.sh [TAG]
set -euo pipefail
tag=${1:-dedupd:dev}
b() { buildah ${BUILDAH_FLAGS:-} "$@"; }
ctr=$(b from "$tag")
mnt=$(b mount "$ctr")
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  b umount "$ctr" >/dev/null
  b rm "$ctr" >/dev/null
}
trap cleanup EXIT
"$mnt/usr/local/bin/dedupd" --version
user=$(b inspect --format '{{.Docker.Config.User}}' "$tag")
chroot --userspec="$user" "$mnt" /usr/local/bin/dedupd serve --listen 127.0.0.1:0 \
  --data-dir /var/lib/dedupd --ready-file /var/lib/dedupd/ready &
pid=$!
for _ in $(seq 1 120); do [ -s "$mnt/var/lib/dedupd/ready" ] && break; sleep 0.5; done
addr=$(head -n1 "$mnt/var/lib/dedupd/ready")
chroot --userspec="$user" "$mnt" /usr/local/bin/dedupd probe --server "$addr"
