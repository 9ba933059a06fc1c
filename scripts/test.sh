#!/usr/bin/env bash
# The whole test suite, every tier, as the README and CI run it (after `npm ci`):
#   1. build the CLI (the tests run the built artifact, as users do)
#   2. unit tests (fake clock, no sleeps) and the SQLite/CLI tier (real processes, real files)
#   3. the Kubernetes tier on a real kube-apiserver + etcd (built once, cached; see test/env/)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "build"
npm run --silent build

step "unit, SQLite and CLI tiers"
node --import tsx --test --test-concurrency=1 \
  "src/**/*.test.ts" "cmd/**/*.test.ts" "examples/**/*.test.ts" "test/sqlite/*.test.ts" "test/cli/*.test.ts"

step "Kubernetes tier (real kube-apiserver + etcd)"
node --import tsx test/env/with-control-plane.ts -- \
  node --import tsx --test --test-concurrency=1 "test/kubernetes/*.test.ts"
