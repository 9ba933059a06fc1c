#!/usr/bin/env bash
# Builds helm once from the Go module proxy into the versioned cache and prints its path.
# Honours an existing `helm` only if LEASEHOLD_HELM points at it. Never committed.
set -euo pipefail
HELM_VERSION="${LEASEHOLD_HELM_VERSION:-3.22.0}"
if [[ -n "${LEASEHOLD_HELM:-}" ]]; then echo "$LEASEHOLD_HELM"; exit 0; fi
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/helm"
bin="$cache/helm-v$HELM_VERSION"
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/prebuilt-guard.sh" && refuse_build_inside_tests helm
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "[helm] building helm v$HELM_VERSION from the Go module proxy (a few minutes the first time)" >&2
cd "$work"
go mod init leasehold.local/helm-build >/dev/null 2>&1
printf 'package tools\n\nimport _ "helm.sh/helm/v3/cmd/helm"\n' >tools.go
GOFLAGS=-mod=mod go get "helm.sh/helm/v3@v$HELM_VERSION" >&2
GOFLAGS=-mod=mod go mod tidy >&2
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm
mv "$bin.tmp" "$bin"
echo "$bin"
