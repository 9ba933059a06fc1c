#!/usr/bin/env bash
# Installs what the tests need on a fresh machine: Debian packages the tests call (python3 for
# the tutorial-compatibility tier, openssl for test certificates, a C++ toolchain for
# better-sqlite3, Docker's daemon and mmdebstrap to build and run the image without a
# registry; containerd, runc, the CNI plugins, busybox and iptables for the single-node cluster
# tier; the PostgreSQL server for the PostgreSQL tier; setfacl, package acl, for the drain key's
# test of a default ACL) and the npm packages. The control plane is built by the Kubernetes tier
# itself (test/support/build-control-plane.sh), once, into a cache outside the repo, as are helm
# and promtool/prometheus (test/support/build-helm.sh, build-prometheus.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for tool in python3 openssl make g++ go dockerd mmdebstrap containerd runc busybox iptables setfacl; do command -v "$tool" >/dev/null || need+=("$tool"); done
[[ -x /usr/lib/cni/bridge ]] || need+=(cni)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
if ((${#need[@]})); then
  pkgs=()
  for t in "${need[@]}"; do
    case "$t" in
      g++) pkgs+=(g++) ;; go) pkgs+=(golang-go) ;; dockerd) pkgs+=(docker.io) ;; busybox) pkgs+=(busybox-static) ;;
      cni) pkgs+=(containernetworking-plugins) ;; setfacl) pkgs+=(acl) ;; *) pkgs+=("$t") ;;
    esac
  done
  echo "==> installing Debian packages: ${pkgs[*]}"
  if [[ $(id -u) -eq 0 ]]; then apt-get update -qq && apt-get install -y -qq "${pkgs[@]}"; else sudo apt-get update -qq && sudo apt-get install -y -qq "${pkgs[@]}"; fi
fi
echo "==> npm ci (better-sqlite3 compiles from source: about a minute)"
npm ci --no-audit --no-fund
