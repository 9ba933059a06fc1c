#!/usr/bin/env bash
# The Kubernetes tier as one job, which scripts/test.sh runs beside the local tiers: first the
# tools of the Kubernetes and cluster tiers (built once into ~/.cache/leasehold, at the lowest
# priority, as a background build is; from the cache in seconds), then the tier at normal
# priority against its control plane. Like the local tiers it waits on real time most of its
# run, so the two share the machine's two cores without slowing each other much.
#   test-kubernetes-tier.sh TOOLS_OUT [--node]
# TOOLS_OUT receives build-test-tools.sh's list of the scripts it ran, for the cluster tier.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
shift
nice -n 19 ionice -c 3 bash test/support/build-test-tools.sh "$@" >"$out"
LEASEHOLD_TOOLS_PREBUILT="$(cat "$out")"
export LEASEHOLD_TOOLS_PREBUILT
echo "tools ready: $LEASEHOLD_TOOLS_PREBUILT"
mapfile -t kube_tests < <(bash scripts/test-files.sh kubernetes)
node --import tsx test/support/with-control-plane.ts -- \
  node --import tsx --test --test-concurrency=1 --test-reporter=spec "${kube_tests[@]}"
