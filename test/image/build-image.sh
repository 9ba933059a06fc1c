#!/usr/bin/env bash
# Builds the image users build, from the repository's own Dockerfile, on the local Node base
# (build-node-base.sh), and prints the path of the image as a docker-archive tar (for
# `docker load` or `ctr images import`). Uses a private Docker daemon, stopped by its
# PID afterwards (test/image/dockerd.sh). Cached by a digest of everything the Dockerfile copies.
#   test/image/build-image.sh [NODE_VERSION]   (default: the Dockerfile's)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
version="${1:-$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9.]*\)-.*/\1/p' "$repo/Dockerfile")}"
tag="leasehold:dev"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/images"
log() { printf '[image] %s\n' "$*" >&2; }
inputs="$(cd "$repo" && git ls-files -s Dockerfile .dockerignore package.json package-lock.json tsconfig.json tsconfig.build.json cmd src examples | sha256sum | cut -c1-12)"
dirty="$(cd "$repo" && git status --porcelain -- Dockerfile .dockerignore package.json package-lock.json tsconfig.json tsconfig.build.json cmd src examples | sha256sum | cut -c1-6)"
out="$cache/leasehold-node$version-$inputs-$dirty.tar"
if [[ -f "$out" ]]; then log "cached: $out"; echo "$out"; exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/../support/prebuilt-guard.sh" && refuse_build_inside_tests image

base="$(bash "$repo/test/image/build-node-base.sh" "$version")"
work="$(mktemp -d /tmp/leasehold-docker-XXXXXX)"
trap 'bash "$repo/test/image/dockerd.sh" stop "$work"' EXIT
log "starting a private Docker daemon in $work"
DOCKER_HOST="$(bash "$repo/test/image/dockerd.sh" start "$work")"
export DOCKER_HOST
docker_cli=/usr/bin/docker # the daemon's own client, from the same package

changes=()
while IFS= read -r line; do changes+=(--change "$line"); done <"$base.changes"
"$docker_cli" import "${changes[@]}" "$base" "leasehold-node-base:$version" >/dev/null
log "docker build (the legacy builder: BuildKit would try to pull a frontend image)"
started=$SECONDS
DOCKER_BUILDKIT=0 "$docker_cli" build --network host --build-arg "NODE_IMAGE=leasehold-node-base:$version" -t "$tag" "$repo" >"$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2
  exit 1
}
log "built in $((SECONDS - started))s; saving $tag"
mkdir -p "$cache"
"$docker_cli" save -o "$out.tmp" "$tag"
rm -f "$cache"/leasehold-node*.tar # one image at a time: each is about 400 MB
mv "$out.tmp" "$out"
echo "$out"
