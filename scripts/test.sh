#!/usr/bin/env bash
# The whole test suite, every tier, as the README and CI run it (after `npm ci`):
#   1. build the CLI (the tests run the built artifact, as users do)
#   2. unit tests (fake clock, no sleeps) and the SQLite/CLI tier (real processes, real files),
#      with Node's coverage report of the test processes; under the floor in
#      test/support/coverage-floor.mjs, the step fails
#   3. the same local tiers on the Node version the image ships (the Dockerfile's NODE_IMAGE),
#      with better-sqlite3 built for it (scripts/test-on-node.sh; both cached)
#   4. the tools the next tiers use (control plane, helm, prometheus, the client-go peer, and as
#      root the node binaries and images), each built once into ~/.cache/leasehold before any
#      test starts its clock (test/support/build-test-tools.sh)
#   5. the PostgreSQL tier on a real PostgreSQL server (Debian's, started in a temporary
#      directory on a loopback port and removed after)
#   6. the Kubernetes tier on a real kube-apiserver + etcd (built once, cached; see test/support/),
#      including the image built from the Dockerfile, run by a private Docker daemon
#   7. the cluster tier: that image and the chart, installed by helm on a real single-node
#      Kubernetes that test/cluster/cluster.sh brings up and tears down (root needed)
# The files of each tier come from scripts/test-files.sh, the one list package.json uses too.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
tests() { bash scripts/test-files.sh "$1"; }

step "build"
npm run --silent build

step "unit, SQLite and CLI tiers, with coverage (its floors: docs/testing.md)"
mapfile -t local_tests < <(tests local)
node --import tsx --import ./test/support/coverage-test-processes.mjs --test --test-concurrency=1 --experimental-test-coverage \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=./test/support/coverage-floor.mjs --test-reporter-destination=stdout "${local_tests[@]}"

image_node="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9.]*\)-.*/\1/p' Dockerfile)"
step "unit, SQLite and CLI tiers on Node $image_node (the image's)"
bash scripts/test-on-node.sh "$image_node"

step "tools for the Kubernetes and cluster tiers (built once, cached in ~/.cache/leasehold)"
tools_started=$SECONDS
node_flag=()
[[ $(id -u) -eq 0 ]] && node_flag=(--node)
LEASEHOLD_TOOLS_PREBUILT="$(bash test/support/build-test-tools.sh "${node_flag[@]}")"
export LEASEHOLD_TOOLS_PREBUILT
echo "tools ready in $((SECONDS - tools_started))s: $LEASEHOLD_TOOLS_PREBUILT"

step "PostgreSQL tier (a real PostgreSQL server)"
mapfile -t pg_tests < <(tests postgres)
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${pg_tests[@]}"

step "Kubernetes tier (real kube-apiserver + etcd; the image from the Dockerfile)"
mapfile -t kube_tests < <(tests kubernetes)
node --import tsx test/support/with-control-plane.ts -- \
  node --import tsx --test --test-concurrency=1 --test-reporter=spec "${kube_tests[@]}"

step "cluster tier (a real single-node Kubernetes: the chart and the image in pods)"
mapfile -t cluster_tests < <(tests cluster)
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${cluster_tests[@]}"
