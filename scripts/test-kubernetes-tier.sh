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
# Two halves of the files (node:test's --test-shard), each against a control plane of its own,
# at once: the tier waits on real time (API calls, lease timings), not on the CPU, and one after
# the other its files took longer than the local tiers beside it. Each file still runs alone
# against its control plane, so a file that installs something cluster-wide (a webhook, an
# admission policy) is never seen by another file at the same time. LEASEHOLD_KUBE_HALVES=1 runs
# every file against one control plane, as before.
halves="${LEASEHOLD_KUBE_HALVES:-2}"
[[ "$halves" =~ ^[12]$ ]] || { echo "LEASEHOLD_KUBE_HALVES is '$halves': 1 or 2" >&2; exit 2; }
logs="$(mktemp -d)"
pids=()
for ((i = 1; i <= halves; i++)); do
  node --import tsx test/support/with-control-plane.ts -- \
    node --import tsx --test --test-concurrency=1 --test-shard="$i/$halves" --test-reporter=spec "${kube_tests[@]}" \
    >"$logs/$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for ((i = 1; i <= halves; i++)); do
  status=0
  wait "${pids[$((i - 1))]}" || status=$?
  echo "--- the Kubernetes tier, half $i of $halves (exit $status) ---"
  cat "$logs/$i.log"
  ((status == 0)) || rc=$status
done
rm -rf "$logs"
exit "$rc"
