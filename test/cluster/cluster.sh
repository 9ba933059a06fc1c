#!/usr/bin/env bash
# A real single-node Kubernetes on this machine, for the cluster tier: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet (version-stamped, from the cache of
# test/support/build-control-plane.sh --node), containerd + runc + the CNI plugins from Debian,
# the images made locally (no registry). Everything lives under DIR.
#
#   test/cluster/cluster.sh up DIR     # prints the admin kubeconfig path when the node is Ready
#   test/cluster/cluster.sh down DIR   # always safe to call, also after a failed `up`
#
# One cluster per machine: a second `up` while one runs fails at once and changes nothing; one
# left behind by a run cut off before its `down` (nothing of it runs) is torn down first.
#
# Network: pods live on a bridge this script creates (lh-br0, 10.244.77.0/24). The API server
# listens on the bridge's address only; one DNAT rule sends the in-cluster address of
# kubernetes.default (10.96.0.1:443) to it, and a FORWARD rule drops anything from the pod
# network that is not for the pod network itself, so no pod traffic is ever routed off the
# machine. No kube-proxy runs, so the API server could not reach a Service's IP (the operator's
# webhook): --enable-aggregator-routing makes it resolve a Service to its endpoints itself, for
# admission webhooks as for aggregated APIs. `down` removes the bridge, the rules, network namespaces and mounts, stops every
# daemon by its PID, and restores the sysctls the kubelet changes.
set -euo pipefail
cmd="${1:?usage: cluster.sh up|down DIR}"
dir="${2:?usage: cluster.sh up|down DIR}"
# Absolute, since the bridge's alias names it to whoever claims next, from anywhere.
dir="$(realpath -m -- "$dir")"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
# The bridge is the machine-wide claim (see claim); only the claim's own check names another.
BRIDGE="${LEASEHOLD_CLUSTER_BRIDGE:-lh-br0}"
if [[ "$BRIDGE" == lh-br0 ]]; then CHAIN=LEASEHOLD-CLUSTER; else CHAIN="LH-$BRIDGE"; fi
# Claims of the bridge, and the teardown of one left behind, one at a time on this machine.
CLAIM_LOCK="/run/lock/leasehold-cluster-$BRIDGE.lock"
NODE_IP=10.244.77.1
POD_CIDR=10.244.77.0/24
SERVICE_IP=10.96.0.1
API_PORT=16443
ETCD_PORT=23790
NODE=lh-node
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward)
HOST_DIRS=(/var/lib/kubelet /var/log/containers /var/log/pods /run/containerd /etc/cni)
log() { printf '[cluster] %s\n' "$*" >&2; }

stop_pid() {
  local f="$1" pid
  [[ -f "$f" ]] || return 0
  pid="$(cat "$f")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

down() {
  [[ -d "$dir" ]] || return 0
  log "tearing down $dir"
  # While this runs, the folder is not left behind (left_behind): its daemons' pid files go
  # before its bridge does, and a claim in between must not tear it down a second time.
  mkdir -p "$dir/pids" && echo $$ >"$dir/pids/down"
  if [[ -f "$dir/admin.kubeconfig" && -f "$dir/pids/kube-apiserver" ]]; then
    # Pods first, while the kubelet runs, so their volumes are unmounted and sandboxes removed.
    timeout 60 "$dir/bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" delete pods --all -A --grace-period=0 --force --wait=true >/dev/null 2>&1 || true
  fi
  for d in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_pid "$dir/pids/$d"; done
  if [[ -S "$dir/containerd/containerd.sock" ]]; then
    for id in $(ctr -a "$dir/containerd/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$dir/containerd/containerd.sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
  fi
  stop_pid "$dir/pids/containerd"
  pkill -f "containerd-shim-runc-v2 .*-address $dir/containerd/containerd.sock" 2>/dev/null || true
  grep -F " $dir/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  if [[ -f "$dir/netns.before" ]]; then
    # Only the pods' namespaces (containerd names them cni-*), should other software have made some since `up`.
    comm -13 "$dir/netns.before" <(ls /run/netns 2>/dev/null | sort) | { grep '^cni-' || true; } | while read -r ns; do
      umount -l "/run/netns/$ns" 2>/dev/null || true
      ip netns delete "$ns" 2>/dev/null || rm -f "/run/netns/$ns"
    done
  fi
  # Only the cluster that made the bridge removes it and its rules (see up).
  if [[ -f "$dir/network.owned" ]]; then
    ip link delete "$BRIDGE" 2>/dev/null || true
    while iptables -t nat -D PREROUTING -j "$CHAIN" 2>/dev/null; do :; done
    while iptables -t nat -D OUTPUT -j "$CHAIN" 2>/dev/null; do :; done
    iptables -t nat -F "$CHAIN" 2>/dev/null && iptables -t nat -X "$CHAIN" 2>/dev/null || true
    while iptables -D FORWARD -j "$CHAIN" 2>/dev/null; do :; done
    iptables -F "$CHAIN" 2>/dev/null && iptables -X "$CHAIN" 2>/dev/null || true
  fi
  if [[ -f "$dir/sysctls.before" ]]; then
    while IFS='=' read -r key value; do sysctl -qw "$key=$value" 2>/dev/null || true; done <"$dir/sysctls.before"
  fi
  if [[ -f "$dir/hostdirs.before" ]]; then
    for d in "${HOST_DIRS[@]}"; do grep -qxF "$d" "$dir/hostdirs.before" || rm -rf "$d"; done
  fi
  rm -rf "$dir"
}

launch() {
  local name="$1"; shift
  "$@" >"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/pids/$name"
}

wait_for() {
  local what="$1" seconds="$2"; shift 2
  for _ in $(seq $((seconds * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  log "$what: not ready after ${seconds}s"
  return 1
}

token_kubeconfig() {
  local user="$1" token="$2" server="https://$NODE_IP:$API_PORT"
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $server
    certificate-authority: $dir/pki/ca.crt
users:
- name: $user
  user:
    token: $token
contexts:
- name: local
  context: {cluster: local, user: $user, namespace: default}
current-context: local
EOF
}

# Whether the cluster of folder $1 was left behind: none of its daemons, nor its `up`, runs
# (a run cut off before its `down`). Unknown or running: not left behind.
left_behind() {
  local owner="$1" f pid
  [[ "$owner" == /* && -d "$owner/pids" ]] || return 1
  for f in "$owner"/pids/*; do
    [[ -f "$f" ]] || continue
    pid="$(cat "$f")"
    # /proc, not kill -0: a process of another user is running too (kill -0 says EPERM).
    [[ -n "$pid" && -d "/proc/$pid" ]] && return 1
  done
  return 0
}

# Creates the bridge, the machine-wide claim (atomic), named after $dir by its alias. When the
# bridge exists, its owner's folder is in the alias: a cluster left behind by a run that never
# ran `down` (nothing of it runs) is torn down first, so a cut-off session does not fail every
# later one; a cluster that runs is never touched.
claim() {
  # An interface alias holds at most 255 bytes.
  ((${#dir} <= 200)) || { log "$dir: the folder's path is longer than 200 bytes; use a shorter one"; exit 2; }
  echo $$ >"$dir/pids/up"
  exec {lock}>"$CLAIM_LOCK"
  flock -w 600 "$lock" || { log "waited 600 s for another claim of bridge $BRIDGE ($CLAIM_LOCK)"; exit 1; }
  if ! ip link add "$BRIDGE" type bridge 2>/dev/null; then
    local owner
    owner="$(cat "/sys/class/net/$BRIDGE/ifalias" 2>/dev/null || true)"
    if ! left_behind "$owner"; then
      if [[ -n "$owner" && ! -d "$owner" ]]; then
        log "bridge $BRIDGE exists and names $owner, which is gone: if no cluster runs, remove the bridge ('ip link delete $BRIDGE') and the $CHAIN iptables chains"
      elif [[ -z "$owner" ]]; then
        log "bridge $BRIDGE exists and names no folder (made by hand or by an older cluster.sh): if no cluster runs, remove it ('ip link delete $BRIDGE') and the $CHAIN iptables chains"
      else
        log "another cluster is up on this machine (bridge $BRIDGE exists, folder $owner): one at a time; wait for it, or run 'cluster.sh down' on its folder"
      fi
      exit 1
    fi
    log "a cluster left behind in $owner (nothing of it runs): tearing it down first"
    bash "$0" down "$owner"
    ip link add "$BRIDGE" type bridge 2>/dev/null || { log "bridge $BRIDGE is still there after tearing down $owner: remove it with 'ip link delete $BRIDGE'"; exit 1; }
  fi
  # Owned before it is named: if naming it fails, this folder's down still removes it.
  touch "$dir/network.owned"
  ip link set dev "$BRIDGE" alias "$dir"
  exec {lock}>&-
}

up() {
  # Another bridge name is for `claim` alone: a second cluster would share this one's node address and ports.
  [[ "$BRIDGE" == lh-br0 ]] || { log "LEASEHOLD_CLUSTER_BRIDGE is for 'cluster.sh claim' only (a test of the claim): unset it"; exit 2; }
  [[ ! -e "$dir" ]] || { log "$dir exists: run 'cluster.sh down $dir' first"; exit 1; }
  for tool in containerd runc ctr iptables ip openssl; do command -v "$tool" >/dev/null || { log "$tool is missing: run scripts/setup.sh"; exit 1; }; done
  [[ -x /usr/lib/cni/bridge ]] || { log "CNI plugins are missing: run scripts/setup.sh (containernetworking-plugins)"; exit 1; }
  mkdir -p "$dir"/{pids,logs,pki,etcd,containerd,kubelet,cni/net.d,cni/ipam}
  # The node's address, port, iptables chains, host folders and sysctls are the machine's, so one
  # cluster at a time: creating the bridge is the claim (atomic). A second `up` stops here, before
  # it records or changes anything, and its `down` leaves the first cluster's network alone.
  claim
  local bin images
  bin="$(bash "$repo/test/support/build-control-plane.sh" --node)"
  mapfile -t images < <(bash "$repo/test/image/build-image.sh"; bash "$repo/test/cluster/build-node-images.sh")
  ln -s "$bin" "$dir/bin"
  trap 'log "up failed; see $dir/logs"; exit 1' ERR
  for key in "${SYSCTLS[@]}"; do echo "$key=$(sysctl -n "$key")"; done >"$dir/sysctls.before"
  for d in "${HOST_DIRS[@]}"; do [[ -e "$d" ]] && echo "$d"; done >"$dir/hostdirs.before" || true
  ls /run/netns 2>/dev/null | sort >"$dir/netns.before" || true

  log "network: bridge $BRIDGE $NODE_IP, DNAT $SERVICE_IP:443, nothing forwarded off the pod network"
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  iptables -t nat -N "$CHAIN"
  iptables -t nat -A "$CHAIN" -d "$SERVICE_IP" -p tcp --dport 443 -j DNAT --to-destination "$NODE_IP:$API_PORT"
  iptables -t nat -I PREROUTING -j "$CHAIN"
  iptables -t nat -I OUTPUT -j "$CHAIN"
  iptables -N "$CHAIN"
  iptables -A "$CHAIN" -s "$POD_CIDR" ! -d "$POD_CIDR" -j DROP
  iptables -A "$CHAIN" -d "$POD_CIDR" ! -s "$POD_CIDR" -j DROP
  iptables -I FORWARD -j "$CHAIN"

  log "certificates and tokens"
  local pki="$dir/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 2 -subj /CN=leasehold-cluster-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" -subj /CN=kube-apiserver 2>/dev/null
  printf 'subjectAltName=IP:%s,IP:%s,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' "$NODE_IP" "$SERVICE_IP" >"$pki/san.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -out "$pki/apiserver.crt" -days 2 -extfile "$pki/san.ext" 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  local admin kubelet cm sched
  admin="$(openssl rand -hex 16)"; kubelet="$(openssl rand -hex 16)"; cm="$(openssl rand -hex 16)"; sched="$(openssl rand -hex 16)"
  {
    echo "$admin,admin,admin-uid,\"system:masters\""
    echo "$kubelet,system:node:$NODE,node-uid,\"system:nodes\""
    echo "$cm,system:kube-controller-manager,cm-uid"
    echo "$sched,system:kube-scheduler,sched-uid"
  } >"$pki/tokens.csv"
  chmod 600 "$pki/tokens.csv"
  token_kubeconfig admin "$admin" >"$dir/admin.kubeconfig"
  token_kubeconfig "system:node:$NODE" "$kubelet" >"$dir/kubelet.kubeconfig"
  token_kubeconfig system:kube-controller-manager "$cm" >"$dir/controller-manager.kubeconfig"
  token_kubeconfig system:kube-scheduler "$sched" >"$dir/scheduler.kubeconfig"

  log "etcd and kube-apiserver"
  launch etcd "$bin/etcd" --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "default=http://127.0.0.1:$((ETCD_PORT + 1))" --unsafe-no-fsync --log-level warn
  launch kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" --cert-dir "$pki/serving" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
    --token-auth-file "$pki/tokens.csv" --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
    --service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
    --endpoint-reconciler-type none --enable-aggregator-routing=true --allow-privileged --kubelet-preferred-address-types InternalIP --v 1
  wait_for kube-apiserver 120 "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" get --raw /readyz

  log "kube-controller-manager and kube-scheduler"
  launch kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --controllers '*,-nodeipam' \
    --use-service-account-credentials=true \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --v 1
  launch kube-scheduler "$bin/kube-scheduler" --kubeconfig "$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --v 1

  log "containerd (state under $dir/containerd) and the images"
  local c="$dir/containerd"
  cat >"$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:local"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
EOF
  cat >"$dir/cni/net.d/10-leasehold.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "leasehold",
  "plugins": [
    { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$dir/cni/ipam", "ranges": [[{ "subnet": "$POD_CIDR", "rangeStart": "10.244.77.10", "gateway": "$NODE_IP" }]],
                "routes": [{ "dst": "0.0.0.0/0" }] } },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
  launch containerd containerd --config "$c/config.toml"
  wait_for containerd 30 ctr -a "$c/containerd.sock" version
  for image in "${images[@]}"; do ctr -a "$c/containerd.sock" -n k8s.io images import --no-unpack "$image" >/dev/null; done

  log "kubelet"
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
authentication:
  anonymous: { enabled: true }
  webhook: { enabled: false }
authorization: { mode: AlwaysAllow }
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$c/containerd.sock
imageServiceEndpoint: unix://$c/containerd.sock
evictionHard: { memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%" }
imageGCHighThresholdPercent: 100
serializeImagePulls: false
EOF
  launch kubelet "$bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" --root-dir "$dir/kubelet" \
    --hostname-override "$NODE" --node-ip "$NODE_IP" --v 1
  wait_for "node Ready" 120 sh -c "'$bin/kubectl' --kubeconfig '$dir/admin.kubeconfig' get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  # The node lifecycle controller lifts the not-ready taint once it has seen the node Ready.
  wait_for "node schedulable" 120 sh -c "! '$bin/kubectl' --kubeconfig '$dir/admin.kubeconfig' get node $NODE -o jsonpath='{.spec.taints}' | grep -q not-ready"
  trap - ERR
  log "node $NODE Ready: kubectl --kubeconfig $dir/admin.kubeconfig"
  echo "$dir/admin.kubeconfig"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  # The claim alone, for test/cluster/claim.test.ts (with LEASEHOLD_CLUSTER_BRIDGE, a bridge of its own).
  claim) mkdir -p "$dir/pids"; claim ;;
  *) echo "usage: cluster.sh up|down DIR" >&2; exit 2 ;;
esac
