#!/usr/bin/env bash
# Runs a tier of scripts/test-files.sh (local by default: the unit, SQLite and CLI tiers) on
# another Node version, e.g. the one the image ships; `npm test` runs other-node there:
#   scripts/test-on-node.sh 24.22.3 [TIER]
#   scripts/test-on-node.sh 24.22.3 --prepare    only fetch that Node and build the addon for it
# The Node binary comes from scripts/node-version.sh (cached). better-sqlite3's native addon is
# built once per Node ABI into the cache, swapped in for the run, and the original put back
# afterwards, even when a test fails, so the working tree keeps working on the default Node.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:?usage: test-on-node.sh VERSION [TIER|--prepare]}"
tier="${2:-local}"
if [[ "$tier" != --prepare ]]; then
  listed="$(bash scripts/test-files.sh "$tier")" # fails here on a tier test-files.sh does not know
  mapfile -t tests <<<"$listed"
fi
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
[[ "$tier" == --prepare ]] && exit 0
current="$bs3/build/Release/better_sqlite3.node"
cp "$current" "$current.default"
restore() { mv -f "$current.default" "$current"; }
trap restore EXIT
cp "$addon" "$current"

echo "[node $version] the $tier tier (${#tests[@]} files) on $("$node_bin" --version)" >&2
# LEASEHOLD_TEST_FILES_AT_ONCE: how many files run at once (1 by default; npm test runs 2).
at_once="${LEASEHOLD_TEST_FILES_AT_ONCE:-1}"
[[ "$at_once" =~ ^[1-9]$ ]] || { echo "LEASEHOLD_TEST_FILES_AT_ONCE is '$at_once': a number from 1 to 9" >&2; exit 2; }
PATH="$nodedir/bin:$PATH" "$node_bin" --import tsx --test --test-concurrency="$at_once" --test-reporter=spec "${tests[@]}"
