#!/usr/bin/env bash
# Builds the KEP-5866 reference (test/interop/kep-5866-vectors: Kubernetes' own sharding code, which
# the key-to-shard vectors test compares leasehold with) once into the cache, keyed by the
# apimachinery version in its go.mod and a digest of its source, and prints the binary's path.
# Never committed.
set -euo pipefail
src="$(cd "$(dirname "$0")/../interop/kep-5866-vectors" && pwd)"
version="$(awk '$1 == "k8s.io/apimachinery" {print $2}' "$src/go.mod")"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/interop"
digest="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
bin="$cache/kep-5866-vectors-apimachinery-$version-$digest"
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/prebuilt-guard.sh" && refuse_build_inside_tests kep-5866-vectors
mkdir -p "$cache"
echo "[kep-5866-vectors] building the apimachinery $version sharding reference (a minute the first time)" >&2
(cd "$src" && go build -trimpath -o "$bin.tmp" . && mv "$bin.tmp" "$bin")
echo "$bin"
