# The chart's example app (busybox sh). It serves the status directory over HTTP, follows
# leadership on the sidecar's /leader stream, and does its "leader work" only while it leads.
# When it stops that work it tells the sidecar (POST /leader/stopped?token=N, with the drain key
# from the status directory), which then releases the lease (docs/drain.md): the next leader's
# app starts only after this one stopped.
# In shard mode (SHARDS set: the chart's shards.count) it follows the sidecar's /shards stream
# instead, prints which shards it owns, and for each shard it loses says that shard's work
# stopped (POST /shards/stopped?shard=S&token=T, with the same key), which releases that shard
# to its next owner (docs/shards.md).
# Like any sh run as a container's first process it ignores SIGTERM: on a pod's deletion it
# keeps following the stream until "not leader" (or no shard owned), so it can still say its
# work stopped.
sidecar=${SIDECAR_URL:-http://127.0.0.1:4040}
dir=${STATUS_DIR:-/leader}
port=${HTTP_PORT:-8080}

httpd -f -p "$port" -h "$dir" &

token=''
start_work() {
  token=$1
  echo "app: leader work started (token $token)"
}
stop_work() {
  [ -n "$token" ] || return 0
  echo "app: leader work stopped (token $token)"
  # The drain key says this is the app: the sidecar's port is open to the pod network, its
  # status volume only to this pod. Read at each post (a restarted sidecar writes a new one).
  # Best effort: with the sidecar gone there is no release to wait for us. No -T: busybox 1.35's
  # wget (Debian's static build, the test image's) crashes with it.
  if wget -q -O /dev/null --header "Authorization: Bearer $(cat "$dir/drain-key")" --post-data '' "$sidecar/leader/stopped?token=$token"; then
    echo "app: told the sidecar that token $token stopped"
  else
    echo "app: could not tell the sidecar that token $token stopped (wget exit $?)"
  fi
  token=''
}

# Reads the stream's events: one "data:" line of JSON per change. The match on "isLeader":true
# cannot be fooled by the holder's name, whose quotes the JSON escapes.
follow() {
  while IFS= read -r line; do
    case $line in
      'data: '*'"isLeader":true'*)
        t=${line#*'"fencingToken":'}
        t=${t%%[!0-9]*}
        if [ "$t" != "$token" ]; then
          stop_work
          start_work "$t"
        fi
        ;;
      'data: '*) stop_work ;;
    esac
  done
  # The stream ended (the sidecar stopped or restarted): this app no longer knows it leads.
  stop_work
}

# Shard mode. The shards owned, as "shard:token" words in shard order.
owned=''
# Says the work of shard $1 under token $2 stopped: the sidecar releases the shard on this word.
stop_shard() {
  echo "app: shard $1 work stopped (token $2)"
  if wget -q -O /dev/null --header "Authorization: Bearer $(cat "$dir/drain-key")" --post-data '' "$sidecar/shards/stopped?shard=$1&token=$2"; then
    echo "app: told the sidecar that shard $1 (token $2) stopped"
  else
    echo "app: could not tell the sidecar that shard $1 (token $2) stopped (wget exit $?)"
  fi
}
# Moves to the shards in $1: stops the work of each shard (or token) no longer in it, first,
# then starts each new one, and prints the shards owned when they changed.
own() {
  for p in $owned; do
    case " $1 " in *" $p "*) ;; *) stop_shard "${p%:*}" "${p#*:}" ;; esac
  done
  for p in $1; do
    case " $owned " in *" $p "*) ;; *) echo "app: shard ${p%:*} work started (token ${p#*:})" ;; esac
  done
  if [ "$1" != "$owned" ]; then
    owned=$1
    set -- $owned
    echo "app: owns $# shards:$(for p in $owned; do printf ' %s' "${p%:*}"; done)"
  fi
}
# Reads the /shards stream: one "data:" line of JSON per change. Its "owned" array holds
# {"shard":S,"fencingToken":T,...} objects (the fields after the token, a shard's range and
# selector, hold no "}" or "]"); the group's and identity's strings come before it, and their
# quotes are escaped, so "owned":[ cannot be matched inside them.
follow_shards() {
  while IFS= read -r line; do
    case $line in
      'data: '*'"owned":['*)
        o=${line#*'"owned":['}
        own "$(echo "${o%%]*}" | sed 's/{"shard":\([0-9]*\),"fencingToken":\([0-9]*\)[^}]*}/\1:\2/g; s/,/ /g')"
        ;;
    esac
  done
  # The stream ended (the sidecar stopped or restarted): this app no longer knows what it owns.
  own ''
}

if [ -n "${SHARDS:-}" ]; then
  while true; do
    wget -q -O - "$sidecar/shards?watch=1" 2>/dev/null | follow_shards
    sleep 1
  done
fi

while true; do
  wget -q -O - "$sidecar/leader?watch=1" 2>/dev/null | follow
  sleep 1
done
