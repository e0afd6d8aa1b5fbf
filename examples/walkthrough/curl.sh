#!/usr/bin/env bash
# Runs the README's curl snippet ("Over HTTP, with curl"), exactly as written
# there but for the address, against the dedupd whose HTTP API is at
# DEDUPD_HTTP_ADDR (run.sh starts it with --http-listen): the claim
# acquires, the same claim again finds the lease held, and the same key
# with another digest is refused DIGEST_MISMATCH with HTTP 400.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${DEDUPD_HTTP_ADDR:?set DEDUPD_HTTP_ADDR to the address of dedupd --http-listen}"
# The block after the README's marker line, between its ```sh fences.
snippet="$(awk '/examples\/walkthrough\/curl.sh runs this block/ {on=1; next}
  on && /^```sh$/ {inside=1; next}
  inside && /^```$/ {exit}
  inside {print}' README.md)"
[ -n "$snippet" ] || { echo "no curl snippet after the marker in README.md"; exit 1; }
snippet="${snippet//127.0.0.1:7080/$DEDUPD_HTTP_ADDR}"
expect() { # expect WHAT OUTPUT: fail unless OUTPUT holds WHAT
  case "$2" in *"$1"*) ;; *) echo "expected $1 in: $2"; exit 1 ;; esac
}
first="$(sh -c "$snippet")"
echo "$first"
expect '"outcome":"OUTCOME_ACQUIRED"' "$first"
expect '"fencingToken":"1"' "$first"
again="$(sh -c "$snippet")"
expect '"outcome":"OUTCOME_IN_PROGRESS"' "$again"
other="${snippet//q83vEjQ=/3q2+7w==}"
conflict="$(sh -c "${other/curl -sS/curl -sS -w '\\n%{http_code}'}")"
expect '"code":"failed_precondition"' "$conflict"
expect '"reason":"DIGEST_MISMATCH"' "$conflict"
[ "$(printf '%s' "$conflict" | tail -n 1)" = 400 ] || { echo "expected HTTP 400: $conflict"; exit 1; }
echo "curl: acquired, then in progress, then DIGEST_MISMATCH (HTTP 400)"
