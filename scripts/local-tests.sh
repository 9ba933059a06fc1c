#!/usr/bin/env bash
# Prints the test files of the local tiers (unit, SQLite, CLI), one per line: the one list
# scripts/test.sh and scripts/test-on-node.sh both run.
set -euo pipefail
cd "$(dirname "$0")/.."
find src cmd examples test/helpers test/sqlite test/cli test/package -name '*.test.ts' | sort
