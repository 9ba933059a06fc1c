#!/usr/bin/env bash
# The one list of test tiers: prints the test files of a tier, one per line. package.json's
# test:* scripts, scripts/test.sh and scripts/test-on-node.sh all take their files from here,
# since Node 20's test runner takes no globs.
#   scripts/test-files.sh unit|sqlite|local|other-node|simulation|postgres|kubernetes|cluster|kind
# unit: beside the code (and the bench's and scripts' pure parts), fake clock, no leasehold process (a few sh); sqlite: real processes on real SQLite files,
# the CLI and the package as users install it (built artifact); local: unit + sqlite, the tiers
# that need no server and run first; other-node: local without SAME_ON_EVERY_NODE, what the
# second Node version (the image's: scripts/test-on-node.sh) runs; simulation: the seeded
# elector simulation alone, pure computation on the fake clock (no real time, no I/O), which
# `npm test` runs beside the other local files rather than among them.
set -euo pipefail
cd "$(dirname "$0")/.."
tier="${1:?usage: test-files.sh unit|sqlite|local|other-node|simulation|postgres|kubernetes|cluster|kind}"
unit=(src cmd examples test/support bench scripts)
sqlite=(test/sqlite test/cli test/package)
# The local files whose subject is the election's own logic, the same JavaScript on every Node,
# at length: the seeded simulation on the fake clock, and processes electing in real time where
# a shorter file already runs the same Node parts (signals, process groups, HTTP, probes, the
# native SQLite addon). Node 20 runs them with the rest; the image's Node runs every other local
# file (CONTRIBUTING "Two Node versions" says why). A new file runs on both unless named here.
SAME_ON_EVERY_NODE=(
  test/support/elector-sim.test.ts        # the seeded simulation: no I/O at all
  test/sqlite/app-health.test.ts          # health thresholds in real time; the probes: src/health/probes.test.ts
  test/sqlite/chaos.test.ts               # invariants under seeded faults
  test/sqlite/cron.test.ts                # once per tick; run's processes: test/sqlite/run.test.ts
  test/sqlite/drain.test.ts               # a release after POST /leader/stopped; the endpoint: src/sidecar/sidecar-drain.test.ts
  test/sqlite/example-app-drain.test.ts   # the chart's shell app (busybox) beside sidecars
  test/sqlite/example-app-shards.test.ts  # the same app in shard mode
  test/sqlite/history-check.test.ts       # the Go checker and SQLite workloads: no Node-specific part
  test/sqlite/handoffs.test.ts            # tokens over 12 handoffs; SIGKILL and SIGTERM: test/sqlite/sidecar-failover.test.ts
  test/sqlite/release-needs-not-leader.test.ts
  test/sqlite/shard-chaos.test.ts         # fenced writes under freezes; the fence itself: src/fencing/*.test.ts
  test/sqlite/run-give-up.test.ts         # counting failed runs
  test/sqlite/status-order.test.ts        # status files across handoffs; atomic writes: src/util/atomic-file.test.ts
  test/sqlite/tutorial-peers.test.ts      # Python peers on the same file: the SQL, not Node
)
files() { find "$@" -name '*.test.ts' | sort; }
case "$tier" in
  unit) files "${unit[@]}" ;;
  sqlite) files "${sqlite[@]}" ;;
  local) files "${unit[@]}" "${sqlite[@]}" ;;
  simulation) echo test/support/elector-sim.test.ts ;;
  other-node)
    for f in "${SAME_ON_EVERY_NODE[@]}"; do [[ -f "$f" ]] || { echo "test-files.sh: $f (in SAME_ON_EVERY_NODE) does not exist" >&2; exit 1; }; done
    files "${unit[@]}" "${sqlite[@]}" | grep -vxF -f <(printf '%s\n' "${SAME_ON_EVERY_NODE[@]}")
    ;;
  postgres) files test/postgres ;;
  kubernetes) files test/kubernetes ;;
  cluster) files test/cluster ;;
  kind) files test/kind ;;
  *) echo "test-files.sh: unknown tier '$tier' (unit, sqlite, local, other-node, simulation, postgres, kubernetes, cluster or kind)" >&2; exit 2 ;;
esac
