#!/usr/bin/env bash
# The inner loop, `npm run check`: typecheck, lint, and the unit tier, in about two minutes on
# 2 cores; printing each step's time and the total. `npm test` stays the whole truth (it builds
# and runs every tier, CI's order); this is what to run after each change before that.
#   npm run check              lint the files changed since the branch left main (and uncommitted ones)
#   npm run check -- --all     lint every file, as `npm run lint` does
# - typecheck: tsc --noEmit, incremental (its state in node_modules/.cache/leasehold/), so a
#   second run checks only what changed;
# - lint: eslint (with type information) and prettier on the changed files, or all of them with
#   --all; then the four generated-text and graph checks of `npm run lint`, always on everything
#   (the chart README, the dashboard picture, the CLI reference, the import graph and its layers).
#   eslint's --cache skips a file whose text and config did not change; its type-aware rules can
#   miss a breach that a change to another file caused: `npm run lint` (CI) has the last word;
# - unit tests: every file of `scripts/test-files.sh unit`, one per core and at least two at a
#   time (each file is its own process, and their start-up is most of the tier; Node's default,
#   cores - 1, runs one at a time on 2 cores), the longest first so the others fill the second
#   core beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

all=false
for arg in "$@"; do
  case "$arg" in
    --all) all=true ;;
    *) echo "check.sh: unknown argument '$arg' (only --all: lint every file)" >&2; exit 2 ;;
  esac
done

cache=node_modules/.cache/leasehold
mkdir -p "$cache"
started=$SECONDS
step_started=$SECONDS
step() { printf '\n==> %s\n' "$*"; step_started=$SECONDS; }
took() { echo "    $1 in $((SECONDS - step_started)) s"; }
# The total, passed or not: the loop's budget is about two minutes.
finish() {
  local rc=$?
  if ((rc == 0)); then printf '\n==> check passed in %d s (npm test runs every tier)\n' "$((SECONDS - started))"
  else printf '\n==> check FAILED (exit %d) after %d s\n' "$rc" "$((SECONDS - started))"; fi
}
trap finish EXIT

# The files to lint: changed since the merge base with main (or origin/main), staged, unstaged
# or untracked; deleted ones left out.
changed_files() {
  local base=""
  for ref in main origin/main; do
    if base="$(git merge-base HEAD "$ref" 2>/dev/null)"; then break; fi
    base=""
  done
  {
    [[ -n "$base" ]] && git diff --name-only --diff-filter=d "$base"
    git diff --name-only --diff-filter=d HEAD
    git ls-files --others --exclude-standard
  } | sort -u | grep -E '\.(ts|js|mjs|json)$' | grep -vE '^(dist|node_modules)/|(^|/)package-lock\.json$' || true
}

step "typecheck (tsc, incremental)"
npx tsc --noEmit --incremental --tsBuildInfoFile "$cache/tsc.tsbuildinfo" -p tsconfig.json
took "typecheck"

if $all; then
  step "lint: eslint and prettier on every file"
  npx eslint --cache --cache-location "$cache/eslint/" .
  npx prettier --check --log-level warn "**/*.{ts,js,mjs,json}"
else
  mapfile -t files < <(changed_files)
  step "lint: eslint and prettier on ${#files[@]} changed file(s) (--all for every file)"
  mapfile -t code < <(printf '%s\n' "${files[@]}" | grep -E '\.(ts|js|mjs)$' || true)
  if ((${#code[@]})); then npx eslint --cache --cache-location "$cache/eslint/" --no-warn-ignored "${code[@]}"; fi
  if ((${#files[@]})); then npx prettier --check --log-level warn "${files[@]}"; fi
fi
node --import tsx scripts/chart-readme.ts --check
node --import tsx scripts/dashboard-picture.ts --check
node --import tsx scripts/cli-reference.ts --check
node --import tsx scripts/import-graph.ts --check
took "lint"

jobs="$(nproc)"
((jobs >= 2)) || jobs=2
step "unit tests (scripts/test-files.sh unit, $jobs files at a time)"
# The seeded elector simulation is the longest file by far (hundreds of simulated elections
# under node:test's async tracking): started first, the rest run beside it.
first=(test/support/elector-sim.test.ts)
mapfile -t unit < <(bash scripts/test-files.sh unit)
ordered=()
for f in "${first[@]}"; do [[ " ${unit[*]} " == *" $f "* ]] && ordered+=("$f"); done
for f in "${unit[@]}"; do [[ " ${first[*]} " == *" $f "* ]] || ordered+=("$f"); done
node --import tsx --test --test-concurrency="$jobs" --test-reporter=dot "${ordered[@]}"
took "${#ordered[@]} unit test files"
