#!/usr/bin/env bash
# The two images a node needs besides leasehold's, made without a registry, as docker-archive
# tars in the cache (printed, one per line):
#   localhost/pause:local    the sandbox image, compiled from Kubernetes' own build/pause/linux/pause.c
#                            (from the k8s.io/kubernetes module in the Go module cache), static
#   localhost/busybox:local  the example app, from Debian's busybox-static
# A private Docker daemon (test/image/dockerd.sh) turns each rootfs into an image.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
k8s="${LEASEHOLD_K8S_VERSION:-1.37.2}"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/images"
pause_tar="$cache/pause-k8s-v$k8s.tar"
# The example app's applets (httpd serves the status volume on the app's port); the cache key
# follows the list, so adding one rebuilds the image.
applets="sh cat echo sleep ls wget trap true false date grep httpd"
busybox_tar="$cache/busybox-local-$(printf '%s' "$applets" | sha256sum | cut -c1-8).tar"
log() { printf '[node-images] %s\n' "$*" >&2; }
if [[ -f "$pause_tar" && -f "$busybox_tar" ]]; then printf '%s\n%s\n' "$pause_tar" "$busybox_tar"; exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/../support/prebuilt-guard.sh" && refuse_build_inside_tests node-images
mkdir -p "$cache"
work="$(mktemp -d /tmp/leasehold-node-images-XXXXXX)"
trap 'bash "$repo/test/image/dockerd.sh" stop "$work/docker"; rm -rf "$work"' EXIT

log "pause from k8s.io/kubernetes v$k8s build/pause/linux/pause.c"
moddir="$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$k8s" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
mkdir -p "$work/pause-root"
gcc -Os -static -DVERSION="v$k8s-leasehold" -o "$work/pause-root/pause" "$moddir/build/pause/linux/pause.c"
strip "$work/pause-root/pause"

log "busybox from busybox-static"
command -v busybox >/dev/null || { log "busybox is missing: run scripts/setup.sh (Debian busybox-static)"; exit 1; }
mkdir -p "$work/busybox-root/bin" "$work/busybox-root/tmp"
cp "$(command -v busybox)" "$work/busybox-root/bin/busybox"
for applet in $applets; do ln -sf busybox "$work/busybox-root/bin/$applet"; done

DOCKER_HOST="$(bash "$repo/test/image/dockerd.sh" start "$work/docker")"
export DOCKER_HOST
tar -C "$work/pause-root" -c . | /usr/bin/docker import --change 'ENTRYPOINT ["/pause"]' - localhost/pause:local >/dev/null
tar -C "$work/busybox-root" -c . | /usr/bin/docker import --change 'ENV PATH=/bin' --change 'CMD ["sh"]' - localhost/busybox:local >/dev/null
/usr/bin/docker save -o "$pause_tar.tmp" localhost/pause:local && mv "$pause_tar.tmp" "$pause_tar"
/usr/bin/docker save -o "$busybox_tar.tmp" localhost/busybox:local && mv "$busybox_tar.tmp" "$busybox_tar"
printf '%s\n%s\n' "$pause_tar" "$busybox_tar"
