#!/usr/bin/env bash
# Builds promtool and prometheus once from the Go module proxy into the versioned cache and
# prints the folder that holds them. Honours LEASEHOLD_PROMETHEUS_DIR when it holds both.
# The web UI's assets are not embedded (no builtinassets tag): the tests only use the HTTP API.
# The first build takes several minutes on 2 cores; progress goes to stderr, the path to stdout.
set -euo pipefail
PROM_VERSION="${LEASEHOLD_PROMETHEUS_VERSION:-0.316.0}"
log() { printf '[prometheus] %s\n' "$*" >&2; }
complete() { [[ -x "$1/promtool" && -x "$1/prometheus" ]]; }
if [[ -n "${LEASEHOLD_PROMETHEUS_DIR:-}" ]]; then
  if complete "$LEASEHOLD_PROMETHEUS_DIR"; then echo "$LEASEHOLD_PROMETHEUS_DIR"; exit 0; fi
  log "LEASEHOLD_PROMETHEUS_DIR=$LEASEHOLD_PROMETHEUS_DIR lacks promtool or prometheus; building into the cache instead"
fi
DEST="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/prometheus-v$PROM_VERSION"
if complete "$DEST"; then log "cached: $DEST"; echo "$DEST"; exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/prebuilt-guard.sh" && refuse_build_inside_tests prometheus

command -v go >/dev/null || { log "go is not on PATH: promtool and prometheus are built with the Go toolchain"; exit 1; }
mkdir -p "$DEST"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-mod=mod" CGO_ENABLED=0
started=$SECONDS
cd "$work"
go mod init leasehold.local/prometheus-build >/dev/null 2>&1
printf 'package tools\n\nimport (\n\t_ "github.com/prometheus/prometheus/cmd/prometheus"\n\t_ "github.com/prometheus/prometheus/cmd/promtool"\n)\n' >tools.go
log "github.com/prometheus/prometheus v$PROM_VERSION: downloading modules"
go get "github.com/prometheus/prometheus@v$PROM_VERSION" >&2
go mod tidy >&2
for b in promtool prometheus; do
  [[ -x "$DEST/$b" ]] && continue
  log "compiling $b ($((SECONDS - started))s so far)"
  go build -trimpath -ldflags "-s -w" -o "$DEST/$b.tmp" "github.com/prometheus/prometheus/cmd/$b"
  mv "$DEST/$b.tmp" "$DEST/$b"
done
complete "$DEST" || { log "build finished but binaries are missing in $DEST"; exit 1; }
log "built in $((SECONDS - started))s: $DEST"
echo "$DEST"
