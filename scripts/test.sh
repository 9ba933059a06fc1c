#!/usr/bin/env bash
# The whole test suite, every tier, as the README and CI run it (after `npm ci`):
#   1. build the CLI (the tests run the built artifact, as users do)
#   2. the tools the Kubernetes and cluster tiers use (control plane, helm, prometheus, the
#      client-go peer, and as root the node binaries and images), each built once into
#      ~/.cache/leasehold (test/support/build-test-tools.sh): started in the background at the
#      lowest CPU and I/O priority, so a cold build (most of a cold run) uses what the local and
#      PostgreSQL tiers leave idle, which is most of it, and takes nothing they want; the
#      Kubernetes tier (step 6) starts when they are done, in the same job, so they are done
#      before any test that needs them starts its clock. LEASEHOLD_TOOLS_SERIAL=1 builds them in
#      the foreground first instead
#   3. unit tests and the SQLite/CLI tier (real processes, real files) on Node 20, two files at
#      a time (they wait on real time), with Node's
#      coverage report of the test processes; under the floor in test/support/coverage-floor.mjs,
#      the step fails. The seeded elector simulation (`scripts/test-files.sh simulation`), pure
#      computation on the fake clock, runs beside them in the background at the lowest priority,
#      without coverage: under coverage it took twice as long and added nothing to the figure
#      (docs/testing.md); waited for when this step ends
#   4. on the Node version the image ships (the Dockerfile's NODE_IMAGE), with better-sqlite3
#      built for it (scripts/test-on-node.sh; both cached; the build in the background from the
#      start, as the tools are): the local files whose behaviour can
#      differ between Node versions, two at a time, `scripts/test-files.sh other-node` (CONTRIBUTING "Two Node
#      versions"), in a copy of the tree (its addon swapped there), beside step 7 and waited
#      for after it
#   5. the PostgreSQL tier on a real PostgreSQL server (Debian's, started in a temporary
#      directory on a loopback port and removed after), run beside step 3 (both wait on real
#      time) and waited for after it
#   6. the Kubernetes tier on a real kube-apiserver + etcd (built once, cached; see test/support/),
#      in two halves of its files, each against a control plane of its own, at once,
#      including the image built from the Dockerfile, run by a private Docker daemon: beside
#      step 3, after the tools (scripts/test-kubernetes-tier.sh), and waited for after it
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

# --- work in the background --------------------------------------------------------------------
# What needs no real time (building the tools, the simulation) runs beside the tiers that do, at
# the lowest CPU and I/O priority: it takes only what they leave idle, and they wait on real
# time most of the run. Each job is its own process group (setsid), so a failed run stops it and
# what it started; its output is kept and printed when it is waited for.
work="$(mktemp -d)"
declare -A job_pid=() job_began=()
background() {
  local name="$1"
  shift
  job_began[$name]=$SECONDS
  setsid nice -n 19 ionice -c 3 "$@" >"$work/$name.out" 2>"$work/$name.log" &
  job_pid[$name]=$!
}
# A tier that waits on real time, run beside another at normal priority (a tier at nice 19 would
# wait behind the tools' build and time out): its spec output goes to its log, printed at await.
beside() {
  local name="$1"
  shift
  job_began[$name]=$SECONDS
  setsid "$@" >"$work/$name.log" 2>&1 &
  job_pid[$name]=$!
}
# Waits for a job, prints what it said, and fails as it did.
await() {
  local name="$1" rc=0
  wait "${job_pid[$name]}" || rc=$?
  unset "job_pid[$name]"
  cat "$work/$name.log"
  echo "[$name] ran for $(clock $((SECONDS - job_began[$name]))) in the background; exit $rc"
  return "$rc"
}
finish() {
  local rc=$?
  end_step
  for name in "${!job_pid[@]}"; do kill -- "-${job_pid[$name]}" 2>/dev/null || true; done
  rm -rf "$work"
  if [[ -n "${node24_tree:-}" ]]; then rm -rf "$node24_tree"; fi
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
# better-sqlite3 is compiled for it in the background, until the step that runs on it.
step "Node $image_node, the image's (fetched once, cached)"
bash scripts/node-version.sh "$image_node" >/dev/null
background addon bash scripts/test-on-node.sh "$image_node" --prepare

# The tools for the Kubernetes and cluster tiers, then the Kubernetes tier, as one job beside the
# local tiers (scripts/test-kubernetes-tier.sh): the tiers wait on real time, and one after the
# other they took longer than CI's 30 minutes with the tools cached. LEASEHOLD_TOOLS_SERIAL=1
# builds the tools first, in the foreground.
if [[ "${LEASEHOLD_TOOLS_SERIAL:-}" == 1 ]]; then
  step "tools for the Kubernetes and cluster tiers, first (LEASEHOLD_TOOLS_SERIAL=1)"
  bash test/support/build-test-tools.sh "${node_flag[@]}" >/dev/null
fi
echo "==> tools, then the Kubernetes tier (a real kube-apiserver and etcd; the image from the Dockerfile): running beside the local tiers"
beside kubernetes bash scripts/test-kubernetes-tier.sh "$work/tools.out" "${node_flag[@]}"
echo "==> the seeded elector simulation: running in the background"
mapfile -t simulation < <(tests simulation)
background simulation node --import tsx --test --test-concurrency=1 --test-reporter=spec "${simulation[@]}"

# The PostgreSQL tier beside the Node 20 step: both wait on real time (about 12 % of one core
# each, CONTRIBUTING "How long each step takes"), with their own servers, ports and folders.
# Not beside the Node 24 step: that one swaps better-sqlite3's addon in node_modules for its run.
echo "==> PostgreSQL tier (a real PostgreSQL server): running beside the next step"
mapfile -t pg_tests < <(tests postgres)
beside postgres node --import tsx --test --test-concurrency=1 --test-reporter=spec "${pg_tests[@]}"

step "unit, SQLite and CLI tiers on Node $(node -p process.versions.node), with coverage (docs/testing.md); the simulation and PostgreSQL beside them"
mapfile -t local_tests < <(tests local | grep -vxF -f <(tests simulation))
# Two files at a time: they wait on real time, not on the CPU (CONTRIBUTING "How long each step
# takes"), and each has its own folders, files, processes and ports.
node --import tsx --import ./test/support/coverage-test-processes.mjs --test --test-concurrency=2 --experimental-test-coverage \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=./test/support/coverage-floor.mjs --test-reporter-destination=stdout "${local_tests[@]}"
await simulation

step "PostgreSQL tier, beside the last step: the rest of its run"
await postgres

step "Kubernetes tier, beside the last step: the rest of its run (tools built first)"
await kubernetes
LEASEHOLD_TOOLS_PREBUILT="$(cat "$work/tools.out")"
export LEASEHOLD_TOOLS_PREBUILT

# The Node 24 files beside the cluster tier: both wait on real time most of their run. They run
# in a copy of the tree (node_modules and dist included, .git left out), because
# test-on-node.sh swaps better-sqlite3's addon in node_modules for its run and the cluster tier
# loads the default one. World-readable, as the tree is: a test runs the CLI as another user.
step "the same on Node $image_node, the image's: the files that can differ between Node versions (starting, in a copy of the tree)"
await addon
node24_tree="$(mktemp -d /tmp/leasehold-node24-XXXXXX)"
chmod 755 "$node24_tree"
tar -C . --exclude=./.git -cf - . | tar -C "$node24_tree" -xf -
echo "==> Node $image_node's files: running beside the cluster tier, in $node24_tree"
beside node24 env LEASEHOLD_TEST_FILES_AT_ONCE=2 bash "$node24_tree/scripts/test-on-node.sh" "$image_node" other-node

step "cluster tier (a real single-node Kubernetes: the chart and the image in pods)"
mapfile -t cluster_tests < <(tests cluster)
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${cluster_tests[@]}"

step "the same on Node $image_node, beside the cluster tier: the rest of its run"
await node24
