#!/usr/bin/env bash
# Runs the unit, SQLite and CLI tiers on another Node version, e.g. the one the image ships:
#   scripts/test-on-node.sh 24.22.3
# The Node binary comes from scripts/node-version.sh (cached). better-sqlite3's native addon is
# built once per Node ABI into the cache, swapped in for the run, and the original put back
# afterwards, even when a test fails, so the working tree keeps working on the default Node.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:?usage: test-on-node.sh VERSION}"
nodedir="$(bash scripts/node-version.sh "$version")"
node_bin="$nodedir/bin/node"
cache="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}/better-sqlite3"
bs3="node_modules/better-sqlite3"
bs3_version="$(node -p "require('./$bs3/package.json').version")"
abi="$("$node_bin" -p process.versions.modules)"
addon="$cache/$bs3_version-abi$abi/better_sqlite3.node"
if [[ ! -f "$addon" ]]; then
  echo "[node $version] building better-sqlite3 $bs3_version for ABI $abi (about a minute, once)" >&2
  work="$(mktemp -d)"
  cp -r "$bs3" "$work/"
  (cd "$work/better-sqlite3" && rm -rf build && PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir" npm run --silent build-release >&2)
  mkdir -p "$(dirname "$addon")"
  cp "$work/better-sqlite3/build/Release/better_sqlite3.node" "$addon.tmp" && mv "$addon.tmp" "$addon"
  rm -rf "$work"
fi
current="$bs3/build/Release/better_sqlite3.node"
cp "$current" "$current.default"
restore() { mv -f "$current.default" "$current"; }
trap restore EXIT
cp "$addon" "$current"

echo "[node $version] unit, SQLite and CLI tiers on $("$node_bin" --version)" >&2
mapfile -t local_tests < <(bash scripts/test-files.sh local)
PATH="$nodedir/bin:$PATH" "$node_bin" --import tsx --test --test-concurrency=1 --test-reporter=spec "${local_tests[@]}"
