#!/usr/bin/env bash
# The whole test suite, every tier, as the README and CI run it (after `npm ci`):
#   1. build the CLI (the tests run the built artifact, as users do)
#   2. the tools the Kubernetes and cluster tiers use (control plane, helm, prometheus, the
#      client-go peer, and as root the node binaries and images), each built once into
#      ~/.cache/leasehold (test/support/build-test-tools.sh): started in the background at the
#      lowest CPU and I/O priority, so a cold build (most of a cold run) uses what the local and
#      PostgreSQL tiers leave idle, which is most of it, and takes nothing they want; waited for
#      before the Kubernetes tier, so it is still done before any test that needs it starts its
#      clock. LEASEHOLD_TOOLS_SERIAL=1 builds them in the foreground instead, here
#   3. unit tests and the SQLite/CLI tier (real processes, real files) on Node 20, with Node's
#      coverage report of the test processes; under the floor in test/support/coverage-floor.mjs,
#      the step fails
#   4. on the Node version the image ships (the Dockerfile's NODE_IMAGE), with better-sqlite3
#      built for it (scripts/test-on-node.sh; both cached): the local files whose behaviour can
#      differ between Node versions, `scripts/test-files.sh other-node` (CONTRIBUTING "Two Node
#      versions")
#   5. the PostgreSQL tier on a real PostgreSQL server (Debian's, started in a temporary
#      directory on a loopback port and removed after)
#   6. the Kubernetes tier on a real kube-apiserver + etcd (built once, cached; see test/support/),
#      including the image built from the Dockerfile, run by a private Docker daemon
#   7. the cluster tier: that image and the chart, installed by helm on a real single-node
#      Kubernetes that test/cluster/cluster.sh brings up and tears down (root needed)
# Each step prints its time as it ends, and a table of them all at the end, passed or failed.
# The files of each tier come from scripts/test-files.sh, the one list package.json uses too.
set -euo pipefail
cd "$(dirname "$0")/.."

tests() { bash scripts/test-files.sh "$1"; }

# --- step times -------------------------------------------------------------------------------
started=$SECONDS
current=""
current_started=0
times=()
clock() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
end_step() {
  [[ -n "$current" ]] || return 0
  local took=$((SECONDS - current_started))
  times+=("$(printf '%7s  %s' "$(clock "$took")" "$current")")
  printf '<== %s: %s\n' "$current" "$(clock "$took")"
  current=""
}
step() {
  end_step
  current="$1"
  current_started=$SECONDS
  printf '\n==> %s (at %s)\n' "$1" "$(clock $((SECONDS - started)))"
}

# --- the tools, in the background ------------------------------------------------------------
tools_pid=""
tools_out="$(mktemp)"
tools_log="$(mktemp)"
stop_tools() {
  # Its own process group (setsid): the Go compilers it started go with it.
  if [[ -n "$tools_pid" ]] && kill -0 "$tools_pid" 2>/dev/null; then kill -- "-$tools_pid" 2>/dev/null || true; fi
}
finish() {
  local rc=$?
  end_step
  stop_tools
  rm -f "$tools_out" "$tools_log"
  printf '\n==> step times (m:ss)\n'
  printf '%s\n' "${times[@]}"
  printf '%7s  %s\n' "$(clock $((SECONDS - started)))" "$( ((rc == 0)) && echo "total: passed" || echo "total: FAILED (exit $rc)")"
}
trap finish EXIT

node_flag=()
[[ $(id -u) -eq 0 ]] && node_flag=(--node)
image_node="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9.]*\)-.*/\1/p' Dockerfile)"

step "build"
npm run --silent build

# The image's Node is fetched here, first: the image build (a tool) reads it from the same cache.
step "Node $image_node, the image's (fetched once into the cache)"
bash scripts/node-version.sh "$image_node" >/dev/null

if [[ "${LEASEHOLD_TOOLS_SERIAL:-}" != 1 ]]; then
  echo "==> tools for the Kubernetes and cluster tiers: building in the background (nice 19, idle I/O); waited for before the Kubernetes tier"
  tools_began=$SECONDS
  setsid nice -n 19 ionice -c 3 bash test/support/build-test-tools.sh "${node_flag[@]}" >"$tools_out" 2>"$tools_log" &
  tools_pid=$!
fi

step "unit, SQLite and CLI tiers, with coverage (its floors: docs/testing.md)"
mapfile -t local_tests < <(tests local)
node --import tsx --import ./test/support/coverage-test-processes.mjs --test --test-concurrency=1 --experimental-test-coverage \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=./test/support/coverage-floor.mjs --test-reporter-destination=stdout "${local_tests[@]}"

step "on Node $image_node (the image's): the local files that can differ between Node versions"
bash scripts/test-on-node.sh "$image_node" other-node

step "PostgreSQL tier (a real PostgreSQL server)"
mapfile -t pg_tests < <(tests postgres)
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${pg_tests[@]}"

step "tools for the Kubernetes and cluster tiers (built once, cached in ~/.cache/leasehold)"
if [[ -n "$tools_pid" ]]; then
  tools_rc=0
  wait "$tools_pid" || tools_rc=$?
  tools_pid=""
  cat "$tools_log" >&2
  echo "the tools build ran for $(clock $((SECONDS - tools_began))) in the background (this step: the wait for it)"
  ((tools_rc == 0)) || { echo "building the tools failed (exit $tools_rc)" >&2; exit "$tools_rc"; }
else
  bash test/support/build-test-tools.sh "${node_flag[@]}" >"$tools_out"
fi
LEASEHOLD_TOOLS_PREBUILT="$(cat "$tools_out")"
export LEASEHOLD_TOOLS_PREBUILT
echo "tools ready: $LEASEHOLD_TOOLS_PREBUILT"

step "Kubernetes tier (real kube-apiserver + etcd; the image from the Dockerfile)"
mapfile -t kube_tests < <(tests kubernetes)
node --import tsx test/support/with-control-plane.ts -- \
  node --import tsx --test --test-concurrency=1 --test-reporter=spec "${kube_tests[@]}"

step "cluster tier (a real single-node Kubernetes: the chart and the image in pods)"
mapfile -t cluster_tests < <(tests cluster)
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${cluster_tests[@]}"
