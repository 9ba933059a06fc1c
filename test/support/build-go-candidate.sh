#!/usr/bin/env bash
# Builds the client-go reference peer (test/interop/go-candidate) once into the cache, keyed
# by the client-go version in its go.mod and a digest of its source, and prints the binary's path. Never committed.
set -euo pipefail
src="$(cd "$(dirname "$0")/../interop/go-candidate" && pwd)"
version="$(awk '$1 == "k8s.io/client-go" {print $2}' "$src/go.mod")"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/interop"
digest="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
bin="$cache/go-candidate-client-go-$version-$digest"
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/prebuilt-guard.sh" && refuse_build_inside_tests go-candidate
mkdir -p "$cache"
echo "[go-candidate] building client-go $version leader-election peer (a few minutes the first time)" >&2
(cd "$src" && go build -trimpath -o "$bin.tmp" . && mv "$bin.tmp" "$bin")
echo "$bin"
