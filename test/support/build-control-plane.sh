#!/usr/bin/env bash
# Provides etcd, kube-apiserver and kubectl for the Kubernetes test tier, and prints the
# directory that holds them (envtest's layout: one folder with the three binaries).
# With --node it also provides kubelet, kube-controller-manager and kube-scheduler for the
# cluster tier (test/cluster), built from the same throwaway module so they share its build cache.
#
# Every Kubernetes binary is version-stamped (-X .../version.gitVersion=vX.Y.Z): unstamped, the
# API server reports v0.0.0-master+$Format:%H$, which kubectl cannot parse and helm refuses.
#
#   1. KUBEBUILDER_ASSETS, when set and complete, wins: nothing is built.
#   2. Otherwise the versioned cache (outside the repo) is used when complete.
#   3. Otherwise the binaries are built once from the Go module proxy into that cache.
#
# Building kube-apiserver from k8s.io/kubernetes needs a throwaway module: kubernetes' own
# go.mod points its k8s.io/* staging modules at ./staging, and a dependency's replace lines are
# ignored, so our go.mod must replace each staging module with its published v0.X.Y.
# The first build takes 10-20 minutes on 2 cores; progress goes to stderr, the path to stdout.
set -euo pipefail

K8S_VERSION="${LEASEHOLD_K8S_VERSION:-1.37.2}"
ETCD_VERSION="${LEASEHOLD_ETCD_VERSION:-3.7.3}"
CACHE_ROOT="${LEASEHOLD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leasehold}"
# "-stamped": earlier caches held unstamped binaries under the plain name.
DEST="$CACHE_ROOT/control-plane/k8s-v${K8S_VERSION}-stamped_etcd-v${ETCD_VERSION}"
WITH_NODE=false
[[ "${1:-}" == "--node" ]] && WITH_NODE=true

log() { printf '[control-plane] %s\n' "$*" >&2; }
NODE_BINS=(kubelet kube-controller-manager kube-scheduler)
complete() {
  [[ -x "$1/etcd" && -x "$1/kube-apiserver" && -x "$1/kubectl" ]] || return 1
  if $WITH_NODE; then for b in "${NODE_BINS[@]}"; do [[ -x "$1/$b" ]] || return 1; done; fi
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if complete "$KUBEBUILDER_ASSETS"; then
    log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
    echo "$KUBEBUILDER_ASSETS"; exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks etcd, kube-apiserver or kubectl; building into the cache instead"
fi
if complete "$DEST"; then
  log "cached: $DEST"
  echo "$DEST"; exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/prebuilt-guard.sh" && refuse_build_inside_tests control-plane

command -v go >/dev/null || { log "go is not on PATH: the control plane is built with the Go toolchain"; exit 1; }
mkdir -p "$DEST"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-mod=mod" CGO_ENABLED=0
started=$SECONDS

build_k8s() {
  local mod="$work/k8s"
  mkdir -p "$mod" && cd "$mod"
  log "k8s.io/kubernetes v$K8S_VERSION: resolving its staging modules"
  go mod init leasehold.local/k8s-build >/dev/null 2>&1
  local gomod
  gomod="$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [[ -f "$gomod" ]] || { log "could not download k8s.io/kubernetes@v$K8S_VERSION"; exit 1; }
  # Every "k8s.io/x => ./staging/src/k8s.io/x" line becomes "k8s.io/x => k8s.io/x v0.Y.Z".
  local minor="0.${K8S_VERSION#1.}"
  {
    echo "require k8s.io/kubernetes v$K8S_VERSION"
    echo "replace ("
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$gomod" \
      | awk -v v="v$minor" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } >>go.mod
  printf 'package tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kubelet"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n\t_ "k8s.io/kubectl/pkg/cmd"\n)\n' >tools.go
  log "downloading modules (go mod tidy)"
  go mod tidy >&2
  local minor_only="${K8S_VERSION#*.}"; minor_only="${minor_only%%.*}"
  local stamp="" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    stamp+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=${K8S_VERSION%%.*} -X $pkg.gitMinor=$minor_only -X $pkg.gitTreeState=clean"
  done
  local bins=(kube-apiserver kubectl) b
  $WITH_NODE && bins+=("${NODE_BINS[@]}")
  for b in "${bins[@]}"; do
    [[ -x "$DEST/$b" ]] && continue
    log "compiling $b ($((SECONDS - started))s so far; kube-apiserver and kubelet take about 10 minutes each on 2 cores when nothing is cached)"
    go build -trimpath -ldflags "-s -w$stamp" -o "$DEST/$b.tmp" "k8s.io/kubernetes/cmd/$b"
    mv "$DEST/$b.tmp" "$DEST/$b"
  done
}

build_etcd() {
  local mod="$work/etcd"
  mkdir -p "$mod" && cd "$mod"
  log "go.etcd.io/etcd/server/v3 v$ETCD_VERSION: downloading"
  go mod init leasehold.local/etcd-build >/dev/null 2>&1
  printf 'package tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >tools.go
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
  go mod tidy >&2 || true
  log "compiling etcd"
  go build -trimpath -ldflags "-s -w" -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$DEST/etcd.tmp" "$DEST/etcd"
}

[[ -x "$DEST/etcd" ]] || build_etcd
complete "$DEST" || build_k8s
complete "$DEST" || { log "build finished but binaries are missing in $DEST"; exit 1; }
log "built in $((SECONDS - started))s: $DEST"
echo "$DEST"
