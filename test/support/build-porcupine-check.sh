#!/usr/bin/env bash
# Builds the history checker (test/porcupine: Porcupine and the models of docs/testing.md
# "Recorded histories") once into the cache, keyed by the Porcupine version in its go.mod and a
# digest of its source, and prints the binary's path. Never committed. Seconds once the module
# is in Go's cache; the first time it fetches Porcupine (a few hundred KB) from the module proxy.
set -euo pipefail
src="$(cd "$(dirname "$0")/../porcupine" && pwd)"
version="$(grep -o 'github.com/anishathalye/porcupine v[^ ]*' "$src/go.mod" | cut -d" " -f2)"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/porcupine"
digest="$(cat "$src"/*.go "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
bin="$cache/porcupine-check-$version-$digest"
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/prebuilt-guard.sh" && refuse_build_inside_tests porcupine-check
mkdir -p "$cache"
echo "[porcupine-check] building the history checker (Porcupine $version)" >&2
# A name of its own per build: two test processes may build at once; the last mv wins, whole.
(cd "$src" && go build -trimpath -o "$bin.$$.tmp" . && mv "$bin.$$.tmp" "$bin")
echo "$bin"
