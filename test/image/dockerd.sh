#!/usr/bin/env bash
# A private Docker daemon (Debian's docker.io) for the image checks: its own data root, exec
# root and socket under DIR, no bridge, no iptables or masquerade changes. Stopped by its PID;
# anything it left mounted under DIR is unmounted, and DIR removed.
#   test/image/dockerd.sh start DIR   # prints the DOCKER_HOST value
#   test/image/dockerd.sh stop DIR
set -euo pipefail
cmd="${1:?usage: dockerd.sh start|stop DIR}"
dir="${2:?usage: dockerd.sh start|stop DIR}"
case "$cmd" in
  start)
    dockerd_bin="$(command -v dockerd)" || { echo "[dockerd] dockerd is missing: run scripts/setup.sh (Debian docker.io)" >&2; exit 1; }
    mkdir -p "$dir"
    "$dockerd_bin" --data-root "$dir/data" --exec-root "$dir/exec" -H "unix://$dir/docker.sock" --pidfile "$dir/dockerd.pid" \
      --bridge none --iptables=false --ip-masq=false --storage-driver overlay2 >"$dir/dockerd.log" 2>&1 &
    for _ in $(seq 300); do
      DOCKER_HOST="unix://$dir/docker.sock" /usr/bin/docker info >/dev/null 2>&1 && { echo "unix://$dir/docker.sock"; exit 0; }
      sleep 0.1
    done
    echo "[dockerd] did not start:" >&2
    tail -20 "$dir/dockerd.log" >&2
    exit 1
    ;;
  stop)
    if [[ -f "$dir/dockerd.pid" ]]; then
      pid="$(cat "$dir/dockerd.pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    grep -F " $dir/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    rm -rf "$dir"
    ;;
  *) echo "usage: dockerd.sh start|stop DIR" >&2; exit 2 ;;
esac
