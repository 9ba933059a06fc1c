#!/usr/bin/env bash
# Builds every tool the Kubernetes and cluster tiers use, once, into ~/.cache/leasehold, before
# any test starts its clock: on a cold machine the Go builds take minutes, more than a test's
# timeout. scripts/test.sh runs this as its own step, then exports LEASEHOLD_TOOLS_PREBUILT with
# the scripts it ran; from then on test/support/build-tool.ts refuses a script that is not in
# that list, and the build scripts refuse to start a build (test/support/prebuilt-guard.sh), so
# a tool a test builds for itself fails on every machine, not only on a cold one.
#   build-test-tools.sh [--node]   --node: also the cluster tier's node binaries and images (root)
# Prints the list of scripts it ran on stdout (one line); progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
node=false
[[ "${1:-}" == "--node" ]] && node=true
unset LEASEHOLD_TOOLS_PREBUILT

built=()
step() {
  local name="$1"; shift
  local started=$SECONDS
  printf '[tools] %s ...\n' "$name" >&2
  "$@" >/dev/null
  printf '[tools] %s: ready (%ss)\n' "$name" "$((SECONDS - started))" >&2
  built+=("$name")
}

if $node; then
  step build-control-plane.sh bash "$here/build-control-plane.sh" --node
else
  step build-control-plane.sh bash "$here/build-control-plane.sh"
fi
step build-helm.sh bash "$here/build-helm.sh"
step build-prometheus.sh bash "$here/build-prometheus.sh"
step build-go-candidate.sh bash "$here/build-go-candidate.sh"
step build-porcupine-check.sh bash "$here/build-porcupine-check.sh"
step build-kep-5866-vectors.sh bash "$here/build-kep-5866-vectors.sh"
if $node; then
  step build-image.sh bash "$repo/test/image/build-image.sh"
  step build-node-images.sh bash "$repo/test/cluster/build-node-images.sh"
fi
echo "${built[*]}"
