#!/usr/bin/env bash
# The one list of test tiers: prints the test files of a tier, one per line. package.json's
# test:* scripts, scripts/test.sh and scripts/test-on-node.sh all take their files from here,
# since Node 20's test runner takes no globs.
#   scripts/test-files.sh unit|sqlite|local|postgres|kubernetes|cluster|kind
# unit: beside the code (and the bench's and scripts' pure parts), fake clock, no processes; sqlite: real processes on real SQLite files,
# the CLI and the package as users install it (built artifact); local: unit + sqlite, the tiers
# that need no server and run first.
set -euo pipefail
cd "$(dirname "$0")/.."
tier="${1:?usage: test-files.sh unit|sqlite|local|postgres|kubernetes|cluster|kind}"
unit=(src cmd examples test/support bench scripts)
sqlite=(test/sqlite test/cli test/package)
files() { find "$@" -name '*.test.ts' | sort; }
case "$tier" in
  unit) files "${unit[@]}" ;;
  sqlite) files "${sqlite[@]}" ;;
  local) files "${unit[@]}" "${sqlite[@]}" ;;
  postgres) files test/postgres ;;
  kubernetes) files test/kubernetes ;;
  cluster) files test/cluster ;;
  kind) files test/kind ;;
  *) echo "test-files.sh: unknown tier '$tier' (unit, sqlite, local, postgres, kubernetes, cluster or kind)" >&2; exit 2 ;;
esac
