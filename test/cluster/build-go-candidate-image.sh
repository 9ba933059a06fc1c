#!/usr/bin/env bash
# The client-go peer (test/interop/go-candidate) as an image, made without a registry: the same
# source as test/env/build-go-candidate.sh, built static (CGO_ENABLED=0) so that it runs alone in
# a `FROM scratch` image, and saved as a docker-archive tar in the cache (path printed):
#   localhost/go-candidate:local   ENTRYPOINT ["/go-candidate"], user 1000
# With no --kubeconfig the peer uses the pod's service account (client-go's in-cluster config).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
src="$repo/test/interop/go-candidate"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/images"
digest="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" "$0" | sha256sum | cut -c1-12)"
tar_out="$cache/go-candidate-$digest.tar"
log() { printf '[go-candidate-image] %s\n' "$*" >&2; }
if [[ -f "$tar_out" ]]; then echo "$tar_out"; exit 0; fi
mkdir -p "$cache"
work="$(mktemp -d /tmp/leasehold-go-image-XXXXXX)"
trap 'bash "$repo/test/image/dockerd.sh" stop "$work/docker"; rm -rf "$work"' EXIT

log "building the static client-go peer"
mkdir -p "$work/root"
(cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/root/go-candidate" .)

DOCKER_HOST="$(bash "$repo/test/image/dockerd.sh" start "$work/docker")"
export DOCKER_HOST
tar -C "$work/root" --owner=0 --group=0 -c . |
  /usr/bin/docker import --change 'ENTRYPOINT ["/go-candidate"]' --change 'USER 1000:1000' - localhost/go-candidate:local >/dev/null
/usr/bin/docker save -o "$tar_out.tmp" localhost/go-candidate:local && mv "$tar_out.tmp" "$tar_out"
echo "$tar_out"
