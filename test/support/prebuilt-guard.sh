# Sourced by the build scripts just before they would start a build. Inside a test run whose
# tools step already ran (LEASEHOLD_TOOLS_PREBUILT set by scripts/test.sh), a build here would
# run inside some test's timeout: refuse it, naming the place to add it instead.
#   refuse_build_inside_tests NAME
refuse_build_inside_tests() {
  if [[ -n "${LEASEHOLD_TOOLS_PREBUILT:-}" ]]; then
    printf '[%s] not in the cache, and the tools step has run: build it in test/support/build-test-tools.sh, before any test starts its clock\n' "$1" >&2
    exit 3
  fi
}
