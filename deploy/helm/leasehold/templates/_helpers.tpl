{{/* Chart name, truncated to the 63 characters DNS labels allow. */}}
{{- define "leasehold.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already contains the chart name. */}}
{{- define "leasehold.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "leasehold.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "leasehold.labels" -}}
helm.sh/chart: {{ include "leasehold.chart" . }}
{{ include "leasehold.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "leasehold.selectorLabels" -}}
app.kubernetes.io/name: {{ include "leasehold.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "leasehold.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "leasehold.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The leader Service's name, and its EndpointSlice's. */}}
{{- define "leasehold.leaderService" -}}
{{- printf "%s-leader" (include "leasehold.fullname" .) }}
{{- end }}

{{/*
The app's port number the leader Service routes to: `leaderService.targetPort` as a number, or
resolved by name from `app.ports` (an EndpointSlice holds numbers only). Fails, naming the value,
when app.ports has no port of that name, and when there is no app of this chart's to route to.
*/}}
{{- define "leasehold.leaderTargetPort" -}}
{{- if not .Values.app.enabled -}}
{{- fail "leaderService.enabled needs app.enabled: the leader Service routes to this chart's Deployment (your own chart's pods can get their own Service and EndpointSlice, docs/chart.md)" -}}
{{- end -}}
{{- $ref := toString .Values.leaderService.targetPort -}}
{{- $port := "" -}}
{{- if regexMatch "^[0-9]+$" $ref -}}
{{- $port = $ref -}}
{{- else -}}
{{- range .Values.app.ports }}{{ if eq (toString .name) $ref }}{{ $port = toString (int .containerPort) }}{{ end }}{{ end -}}
{{- if not $port }}{{ fail (printf "leaderService.targetPort %q: app.ports has no port of that name" $ref) }}{{ end -}}
{{- end -}}
{{- $port -}}
{{- end }}

{{/* The Lease every candidate of this release competes for. */}}
{{- define "leasehold.leaseName" -}}
{{- default (include "leasehold.fullname" .) .Values.leasehold.lease }}
{{- end }}

{{/*
The shard group's shard count N (`shards.count`): 0 (or unset) is leader election, 1 to 4096 shard
mode, where each sidecar is a member of the group named by the lease (docs/shards.md).
*/}}
{{- define "leasehold.shardCount" -}}
{{- int (default 0 .Values.shards.count) -}}
{{- end }}

{{/* The group's member slots K (`shards.maxMembers`): the sidecar's default, 64, when unset. */}}
{{- define "leasehold.maxMembers" -}}
{{- int (default 64 .Values.shards.maxMembers) -}}
{{- end }}

{{/*
The names of a shard group's Leases, as the sidecar names them (src/backends/kubernetes/group-names.ts):
the header G, the member slots G-member-NNNN (NNNN < K) and the shards G-shard-NNNN (NNNN < N), the
index zero-padded to 4 digits. One quoted name a line, as YAML list items.
*/}}
{{- define "leasehold.groupLeaseNames" -}}
{{- $g := include "leasehold.leaseName" . -}}
- {{ $g | quote }}
{{- range $i := until (include "leasehold.maxMembers" . | atoi) }}
- {{ printf "%s-member-%04d" $g $i | quote }}
{{- end }}
{{- range $i := until (include "leasehold.shardCount" . | atoi) }}
- {{ printf "%s-shard-%04d" $g $i | quote }}
{{- end }}
{{- end }}

{{/*
Refuses, at template time, shard values the sidecar would refuse at start (cmd/shard-flags.ts) and
the leader-only values that mean nothing to a member of a shard group: without this the chart
renders and every pod's sidecar exits 2 in a crash loop, or a value is silently ignored. The
counts' ranges are the schema's. Called with the chart's root.
*/}}
{{- define "leasehold.checkShards" -}}
{{- $n := include "leasehold.shardCount" . | atoi -}}
{{- $sm := .Values.shards.maxMembers -}}
{{- include "leasehold.checkGroupCount" . -}}
{{- include "leasehold.checkGroupSlots" . -}}
{{- if not $n -}}
{{- if not (kindIs "invalid" $sm) -}}
{{- fail (printf "shards.maxMembers %v needs shards.count: it bounds the members of a shard group, and without shards.count the sidecars elect a leader" $sm) -}}
{{- end -}}
{{- else -}}
{{- $g := include "leasehold.leaseName" . -}}
{{- $notForGroups := printf "applies to a lease, not to a shard group (shards.count %d)" $n -}}
{{- if or (gt (len $g) 63) (regexMatch "-(member|shard)-[0-9]{4}$" $g) -}}
{{- fail (printf "the group name %q (leasehold.lease, else the release's full name) is invalid with shards.count: on Kubernetes a group name is a label value (leasehold.io/group): at most 63 characters, and it must not end in -member-NNNN or -shard-NNNN (the names of another group's records)" $g) -}}
{{- end -}}
{{- if .Values.podLabel.enabled -}}
{{- fail (printf "podLabel.enabled %s: a member is neither leader nor follower, so leasehold.io/role would say nothing true" $notForGroups) -}}
{{- end -}}
{{- if .Values.leaderService.enabled -}}
{{- fail (printf "leaderService.enabled %s: a group has no leader for a Service to route to" $notForGroups) -}}
{{- end -}}
{{- with .Values.leasehold.readyWhen -}}
{{- fail (printf "leasehold.readyWhen %q %s: a member is Ready while it holds a session in the group and its app is eligible, whoever owns which shard; leave it empty" . $notForGroups) -}}
{{- end -}}
{{- if not .Values.leasehold.releaseOnExit -}}
{{- fail (printf "leasehold.releaseOnExit false %s: a member that stops always gives each shard up through its drain and leaves the group; one that kept them would leave them without an owner until they expire" $notForGroups) -}}
{{- end -}}
{{- range .Values.leasehold.extraArgs -}}
{{- if regexMatch "^--contention-window(=|$)" . -}}
{{- fail (printf "leasehold.extraArgs has %s, which %s: a member takes a free shard at once, with nobody to contend with" . $notForGroups) -}}
{{- end -}}
{{- end -}}
{{- $k := include "leasehold.maxMembers" . | atoi -}}
{{- if and .Values.app.enabled (gt (int .Values.replicaCount) $k) -}}
{{- fail (printf "replicaCount %d is more than shards.maxMembers %d: a member past the group's slots waits for a free one, owns nothing and is never Ready; raise shards.maxMembers" (int .Values.replicaCount) $k) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
Refuses a shards.count other than the one of the group that exists (its header Lease, named after
the group, says it in the annotation leasehold.io/shards): the Role names the new count's shard
Leases only, so an upgrade would cut the running members (of the old count, until they are
replaced) off their shards past the new count, which would then have no owner; and the new pods
are refused by the group anyway. shards.count 0 (a leader lease) on a group's header Lease is
refused alike. `lookup` needs the cluster: `helm template` and a client-side dry run see no Lease
and render (the new pods would still be refused at start, loudly).
*/}}
{{- define "leasehold.checkGroupCount" -}}
{{- $n := include "leasehold.shardCount" . | atoi -}}
{{- $g := include "leasehold.leaseName" . -}}
{{- $header := lookup "coordination.k8s.io/v1" "Lease" .Release.Namespace $g -}}
{{- $was := dig "metadata" "annotations" "leasehold.io/shards" "" ($header | default dict) -}}
{{- if and $was (ne $was (toString $n)) -}}
{{- fail (printf "shards.count %d, but the shard group %q in namespace %s has %s shards (its Lease %s): a group never has two counts, and the Role would no longer name the Leases its running members own; keep shards.count %s, or stop every member, delete the group's Leases (kubectl delete leases -l leasehold.io/group=%s) and then upgrade" $n $g .Release.Namespace $was $g $was $g) -}}
{{- end -}}
{{- end }}

{{/*
Refuses a shards.maxMembers K that would cut off a member slot in use: the Role names the slots
G-member-0000 ... below K only, so a member of the running group holding slot K or above (until
its pod is replaced) could no longer heartbeat it, and its shards would stay without an owner
until it exits. A slot is in use while its Lease names a holder (a member that left writes it
free). Like checkGroupCount, `lookup` needs the cluster; without it the chart renders.
*/}}
{{- define "leasehold.checkGroupSlots" -}}
{{- $n := include "leasehold.shardCount" . | atoi -}}
{{- if $n -}}
{{- $k := include "leasehold.maxMembers" . | atoi -}}
{{- $g := include "leasehold.leaseName" . -}}
{{- $leases := lookup "coordination.k8s.io/v1" "Lease" .Release.Namespace "" -}}
{{- range (dig "items" list ($leases | default dict)) -}}
{{- $labels := dig "metadata" "labels" dict . -}}
{{- $name := dig "metadata" "name" "" . -}}
{{- $holder := dig "spec" "holderIdentity" "" . -}}
{{- if and (eq (get $labels "leasehold.io/group") $g) (eq (get $labels "leasehold.io/group-record") "member") $holder (hasPrefix (printf "%s-member-" $g) $name) -}}
{{- $slot := trimPrefix (printf "%s-member-" $g) $name | atoi -}}
{{- if ge $slot $k -}}
{{- fail (printf "shards.maxMembers %d, but member slot %d of the shard group %q in namespace %s is in use (its Lease %s, held by %s): the Role would no longer name it and that member would lose its shards; keep shards.maxMembers above %d until that member has left" $k $slot $g $.Release.Namespace $name $holder $slot) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/* True when the sidecar should be a native sidecar (init container, restartPolicy Always). */}}
{{- define "leasehold.nativeSidecar" -}}
{{- $mode := toString .Values.leasehold.nativeSidecar }}
{{- if eq $mode "true" }}true
{{- else if eq $mode "false" }}false
{{- else if semverCompare ">=1.29-0" .Capabilities.KubeVersion.Version }}true
{{- else }}false
{{- end }}
{{- end }}

{{/*
The leasehold sidecar container, for this chart's Deployment and for other charts' pods:
  {{- include "leasehold.sidecar" (dict "root" . "native" true) | nindent 8 }}
Its --drain-timeout is `drain.timeout`, unless the dict has "drainTimeout" (this chart's
Deployment gives the example app's, which posts its stop).
Pods that include it need the "leader" emptyDir volume ({{ include "leasehold.volume" . }}),
a ServiceAccount bound to this chart's Role, and the app container mounting /leader.
*/}}
{{- define "leasehold.sidecar" -}}
{{- $root := .root -}}
{{- $v := $root.Values.leasehold -}}
{{- include "leasehold.checkTimings" $root -}}
{{- include "leasehold.checkShards" $root -}}
{{- $shards := include "leasehold.shardCount" $root | atoi -}}
- name: leasehold
  image: "{{ $v.image.repository }}:{{ default $root.Chart.AppVersion $v.image.tag }}"
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if .native }}
  restartPolicy: Always
  {{- end }}
  args:
    - sidecar
    - --backend=kubernetes
    - --lease={{ include "leasehold.leaseName" $root }}
    {{- if $shards }}
    # Shard mode: a member of the group named by --lease (docs/shards.md); readiness follows its
    # session in the group, and a stopping member always gives its shards up.
    - --shards={{ $shards }}
    - --max-members={{ include "leasehold.maxMembers" $root }}
    {{- end }}
    - --lease-duration={{ $v.leaseDuration }}
    - --renew-deadline={{ $v.renewDeadline }}
    - --retry-period={{ $v.retryPeriod }}
    {{- if not $shards }}
    - --release-on-exit={{ $v.releaseOnExit }}
    - --ready-when={{ default "elected-any" $v.readyWhen }}
    {{- end }}
    - --status-dir=/leader
    - --listen=0.0.0.0:{{ $v.port }}
    - --log-format={{ $v.logFormat }}
    {{- if $root.Values.podLabel.enabled }}
    - --pod-label
    {{- end }}
    {{- if and $root.Values.app.enabled $root.Values.leaderService.enabled }}
    - --leader-endpoints={{ include "leasehold.leaderService" $root }}
    {{- end }}
    {{- with include "leasehold.healthArgs" $root }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- $own := hasKey . "drainTimeout" }}
    {{- with ternary .drainTimeout $root.Values.drain.timeout $own }}
    {{- include "leasehold.checkDrain" (dict "root" $root "name" (ternary "app.drainTimeout" "drain.timeout" $own) "value" .) }}
    - --drain-timeout={{ . }}
    {{- end }}
    {{- range $v.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: LEASEHOLD_IDENTITY
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: LEASEHOLD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    {{- if and $root.Values.app.enabled $root.Values.leaderService.enabled }}
    # The address --leader-endpoints writes into the leader Service's EndpointSlice.
    - name: LEASEHOLD_POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    {{- end }}
    {{- with $v.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    - name: leasehold
      containerPort: {{ $v.port }}
      protocol: TCP
  livenessProbe:
    httpGet:
      path: /healthz
      port: leasehold
    {{- toYaml $v.livenessProbe | nindent 4 }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: leasehold
    {{- toYaml $v.readinessProbe | nindent 4 }}
  volumeMounts:
    - name: leader
      mountPath: /leader
  securityContext:
    {{- toYaml $root.Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml $v.resources | nindent 4 }}
{{- end }}

{{/* The shared status volume. */}}
{{- define "leasehold.volume" -}}
- name: leader
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- end }}

{{/* A Go duration ("1m30s", "500ms") in seconds, as a float: the alerts derive from the timings. */}}
{{- define "leasehold.seconds" -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9.]+(ms|s|m|h)" (toString .) -1 -}}
{{- $n := float64 (regexFind "^[0-9.]+" .) -}}
{{- $unit := regexFind "(ms|s|m|h)$" . -}}
{{- $scale := get (dict "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0) $unit -}}
{{- $total = addf $total (mulf $n $scale) -}}
{{- end -}}
{{- $total -}}
{{- end }}

{{/* Whole seconds, rounded up, as a Prometheus duration ("49s"). */}}
{{- define "leasehold.promDuration" -}}
{{- printf "%ds" (ceil . | int) -}}
{{- end }}

{{/* The label matchers every alert and panel uses: this lease's series, in this namespace unless metrics.prometheusRule.selector says otherwise. */}}
{{- define "leasehold.seriesSelector" -}}
{{- default (printf "namespace=%q" .Release.Namespace) .Values.metrics.prometheusRule.selector -}}
{{- end }}

{{/*
A duration value in whole milliseconds, as the sidecar parses it; fails, naming the value, when
the sidecar would refuse it (finer than 1ms, or longer than a timer can wait). Integer
arithmetic on the digits, so "1.005s" is exactly 1005.
  include "leasehold.milliseconds" (dict "name" "leasehold.retryPeriod" "value" "1.5s")
*/}}
{{- define "leasehold.milliseconds" -}}
{{- $max := 2147483647 -}}
{{- $range := printf "must be from 1ms to %dms (2^31 - 1 ms, the longest a timer can wait)" $max -}}
{{- $text := toString .value -}}
{{- $total := 0 -}}
{{- $tooLong := false -}}
{{- $notWhole := false -}}
{{- range regexFindAll "[0-9.]+(ms|s|m|h)" $text -1 -}}
{{- $digits := splitList "." (regexFind "^[0-9.]+" .) -}}
{{- $scale := get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) (regexFind "(ms|s|m|h)$" .) -}}
{{- /* Leading zeros change nothing ("015s" is 15s to the sidecar); past 10 digits is past the limit whatever the unit, and atoi would overflow. */ -}}
{{- $int := regexReplaceAll "^0+" (first $digits) "" -}}
{{- if gt (len $int) 10 }}{{ $tooLong = true }}{{ else if $int }}{{ $total = add $total (mul (atoi $int) $scale) }}{{ end -}}
{{- $frac := "" -}}
{{- if gt (len $digits) 1 }}{{ $frac = regexReplaceAll "0+$" (index $digits 1) "" }}{{ end -}}
{{- if $frac -}}
{{- /* A fraction with more than 7 significant digits is never whole milliseconds, even in hours. */ -}}
{{- if gt (len $frac) 7 }}{{ $notWhole = true }}{{ else -}}
{{- $part := mul (atoi $frac) $scale -}}
{{- $den := atoi (printf "1%s" (repeat (len $frac) "0")) -}}
{{- if mod $part $den }}{{ $notWhole = true }}{{ else }}{{ $total = add $total (div $part $den) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if gt $total $max }}{{ $tooLong = true }}{{ end -}}
{{- end -}}
{{- if $notWhole -}}
{{- fail (printf "%s %q must be a whole number of milliseconds (no finer than 1ms): the sidecar would exit 2 on every start" .name $text) -}}
{{- end -}}
{{- if or $tooLong (lt $total 1) -}}
{{- fail (printf "%s %q %s: the sidecar would exit 2 on every start" .name $text $range) -}}
{{- end -}}
{{- $total -}}
{{- end }}

{{/* Milliseconds shown as durations are written: 15000 -> 15s, 2400 -> 2400ms, 90000 -> 1m30s. */}}
{{- define "leasehold.showMs" -}}
{{- $ms := int64 . -}}
{{- if or (lt $ms 1000) (mod $ms 1000) }}{{ printf "%dms" $ms }}
{{- else if lt $ms 60000 }}{{ printf "%ds" (div $ms 1000) }}
{{- else if mod $ms 60000 }}{{ printf "%dm%ds" (div $ms 60000) (div (mod $ms 60000) 1000) }}
{{- else }}{{ printf "%dm" (div $ms 60000) }}
{{- end }}
{{- end }}

{{/*
Refuses, at template time, timings the sidecar would refuse at start (src/config/election-options.ts):
leaseDuration > renewDeadline > 1.2 × retryPeriod (client-go's JitterFactor) > 0, and leaseDuration −
renewDeadline at least the clock margin (docs/guarantees.md). Without this the
chart renders and every pod's sidecar exits 2 in a crash loop. Called with the chart's root.
*/}}
{{- define "leasehold.checkTimings" -}}
{{- $v := .Values.leasehold -}}
{{- $lease := include "leasehold.milliseconds" (dict "name" "leasehold.leaseDuration" "value" $v.leaseDuration) | atoi -}}
{{- $renew := include "leasehold.milliseconds" (dict "name" "leasehold.renewDeadline" "value" $v.renewDeadline) | atoi -}}
{{- $retry := include "leasehold.milliseconds" (dict "name" "leasehold.retryPeriod" "value" $v.retryPeriod) | atoi -}}
{{- if le $lease $renew -}}
{{- fail (printf "leasehold.leaseDuration must be greater than leasehold.renewDeadline, so the leader steps down before another may take over (got leaseDuration %s, renewDeadline %s)" (include "leasehold.showMs" $lease) (include "leasehold.showMs" $renew)) -}}
{{- end -}}
{{- /* The clock margin (src/config/election-options.ts clockMarginMs): 50 ms + 0.1% of the lease, rounded up. */ -}}
{{- $margin := add 50 (div (add $lease 999) 1000) -}}
{{- if lt (sub $lease $renew) $margin -}}
{{- fail (printf "leasehold.renewDeadline must be at most leasehold.leaseDuration − %s (50 ms + 0.1%% of leaseDuration: the margin for late timers and clock rates, docs/guarantees.md) (got leaseDuration %s, renewDeadline %s)" (include "leasehold.showMs" $margin) (include "leasehold.showMs" $lease) (include "leasehold.showMs" $renew)) -}}
{{- end -}}
{{- /* renewDeadline > 1.2 × retryPeriod, in integers: 5 × renewDeadline > 6 × retryPeriod. */ -}}
{{- if le (mul $renew 5) (mul $retry 6) -}}
{{- $jittered := printf "%vms" (divf (mul $retry 6) 5) -}}
{{- if not (mod (mul $retry 6) 5) }}{{ $jittered = include "leasehold.showMs" (div (mul $retry 6) 5) }}{{ end -}}
{{- fail (printf "leasehold.renewDeadline must be greater than leasehold.retryPeriod × 1.2 (client-go's JitterFactor), so the leader gets more than one retry before it steps down (got renewDeadline %s, retryPeriod %s × 1.2 = %s)" (include "leasehold.showMs" $renew) (include "leasehold.showMs" $retry) $jittered) -}}
{{- end -}}
{{- end }}

{{/*
The sidecar's source of the app's health (docs/health.md), from `health` and the app's probe:
"--health-http=<url>" or "--health-tcp=<port>", or "none: <why>" when there is none (NOTES.txt
says why). Fails, naming the value, on a source the sidecar would refuse or one that is the
sidecar's own port: the app's health must not depend on leadership.
*/}}
{{- define "leasehold.healthSource" -}}
{{- $h := .Values.health -}}
{{- $own := int .Values.leasehold.port -}}
{{- $circle := printf "is leasehold.port, the sidecar's own port: the app's health must not depend on leadership" -}}
{{- if eq $h.source "off" -}}
none: health.source is off
{{- else if eq $h.source "http" -}}
{{- $url := toString $h.http -}}
{{- if not (regexMatch "^http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?(/[^ ]*)?$" $url) -}}
{{- fail (printf "health.http %q must be http://127.0.0.1:<port><path> (or localhost) with health.source http: the sidecar probes the app in its own pod" $url) -}}
{{- end -}}
{{- /* Decimal, as the sidecar's URL parser reads it: `int` would read a leading 0 as octal. */ -}}
{{- $digits := regexReplaceAll "^http://[^:/]+:?([0-9]*).*$" $url "${1}" | default "80" -}}
{{- $port := regexReplaceAll "^0+([0-9])" $digits "${1}" | atoi -}}
{{- if or (lt $port 1) (gt $port 65535) }}{{ fail (printf "health.http %q: its port must be from 1 to 65535" $url) }}{{ end -}}
{{- if eq $port $own }}{{ fail (printf "health.http %q: port %d %s" $url $port $circle) }}{{ end -}}
--health-http={{ $url }}
{{- else if eq $h.source "tcp" -}}
{{- $port := int $h.tcp -}}
{{- if or (lt $port 1) (gt $port 65535) }}{{ fail (printf "health.tcp %v must be a port from 1 to 65535 with health.source tcp" $h.tcp) }}{{ end -}}
{{- if eq $port $own }}{{ fail (printf "health.tcp %d %s" $port $circle) }}{{ end -}}
--health-tcp={{ $port }}
{{- else -}}
{{- $kind := ternary "app.readinessProbe" "app.livenessProbe" (not (empty .Values.app.readinessProbe)) -}}
{{- $p := default .Values.app.livenessProbe .Values.app.readinessProbe | default dict -}}
{{- $get := $p.httpGet | default dict -}}
{{- $tcp := $p.tcpSocket | default dict -}}
{{- $port := "" -}}
{{- $why := "" -}}
{{- $ref := "" -}}
{{- if not .Values.app.enabled -}}
{{- /* The pods that include the sidecar are another chart's: this chart's app probe is not theirs. */ -}}
{{- $why = "app.enabled is false, and auto reads this chart's app: set health.source http or tcp" -}}
{{- else if empty $p -}}
{{- $why = "the app has no readinessProbe or livenessProbe" -}}
{{- else if $p.httpGet -}}
{{- $ref = $get.port -}}
{{- if and $get.scheme (ne (upper (toString $get.scheme)) "HTTP") }}{{ $why = printf "%s's scheme is %s: the sidecar probes plain HTTP only" $kind $get.scheme }}
{{- else if and $get.host (not (has $get.host (list "127.0.0.1" "localhost"))) }}{{ $why = printf "%s probes host %s, not the pod" $kind $get.host }}
{{- else if $get.httpHeaders }}{{ $why = printf "%s sends httpHeaders, which the sidecar does not" $kind }}
{{- end -}}
{{- else if $p.tcpSocket -}}
{{- $ref = $tcp.port -}}
{{- if $tcp.host }}{{ $why = printf "%s connects to host %s, not the pod" $kind $tcp.host }}{{ end -}}
{{- else -}}
{{- $why = printf "%s is neither httpGet nor tcpSocket" $kind -}}
{{- end -}}
{{- if not $why -}}
{{- if regexMatch "^[0-9]+$" (toString $ref) -}}
{{- $port = toString (int $ref) -}}
{{- else if eq (toString $ref) "leasehold" -}}
{{- $why = printf "%s's port %s %s" $kind $ref $circle -}}
{{- else -}}
{{- range $.Values.app.ports }}{{ if eq (toString .name) (toString $ref) }}{{ $port = toString (int .containerPort) }}{{ end }}{{ end -}}
{{- if not $port }}{{ $why = printf "app.ports has no port named %q for %s" (toString $ref) $kind }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if and (not $why) (eq (int $port) $own) }}{{ $why = printf "%s's port %s %s" $kind $port $circle }}{{ end -}}
{{- if $why -}}
none: {{ $why }}
{{- else if $p.httpGet -}}
{{- $path := default "/" $get.path -}}
--health-http=http://127.0.0.1:{{ $port }}{{ if not (hasPrefix "/" $path) }}/{{ end }}{{ $path }}
{{- else -}}
--health-tcp={{ $port }}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
The sidecar's --health-* arguments, one YAML list item a line, or nothing: the source, then the
probe timings, each from `health.probe`, else the app's probe (readiness, else liveness), else
the kubelet's default. A timeout longer than the period (the kubelet allows it, the sidecar does
not: one probe in flight at a time) is cut to the period.
*/}}
{{- define "leasehold.healthArgs" -}}
{{- $src := include "leasehold.healthSource" . -}}
{{- $extra := join " " .Values.leasehold.extraArgs -}}
{{- if not (hasPrefix "none:" $src) -}}
{{- if regexMatch "(^| )--health-exec(=| |$)" $extra -}}
{{- fail (printf "leasehold.extraArgs has --health-exec, but health.source %s already gives the sidecar a source (at most one): set health.source off to use it" $.Values.health.source) -}}
{{- end -}}
{{- range list "--health-period" "--health-timeout" "--health-initial-delay" "--health-failure-threshold" "--health-success-threshold" -}}
{{- if regexMatch (printf "(^| )%s(=| |$)" .) $extra -}}
{{- fail (printf "leasehold.extraArgs has %s, which the chart sets from health (source %s): set health.probe or health.source instead; given twice, the sidecar would exit 2 on every start" . $.Values.health.source) -}}
{{- end -}}
{{- end -}}
{{- $app := default .Values.app.livenessProbe .Values.app.readinessProbe | default dict -}}
{{- $set := .Values.health.probe | default dict -}}
{{- $d := dict "periodSeconds" 10 "timeoutSeconds" 1 "initialDelaySeconds" 0 "failureThreshold" 3 "successThreshold" 1 -}}
{{- $t := dict -}}
{{- range $k, $v := $d -}}
{{- $_ := set $t $k (int (ternary (get $set $k) (ternary (get $app $k) $v (hasKey $app $k)) (hasKey $set $k))) -}}
{{- end -}}
{{- if gt $t.timeoutSeconds $t.periodSeconds }}{{ $_ := set $t "timeoutSeconds" $t.periodSeconds }}{{ end -}}
- {{ $src }}
- --health-period={{ $t.periodSeconds }}s
- --health-timeout={{ $t.timeoutSeconds }}s
- --health-initial-delay={{ $t.initialDelaySeconds }}s
- --health-failure-threshold={{ $t.failureThreshold }}
- --health-success-threshold={{ $t.successThreshold }}
{{- end -}}
{{- end }}

{{/*
The example Deployment's --drain-timeout, from `app.drainTimeout`: "auto" is, for the example app
(no `app.command`), the longest the timings allow (renewDeadline/2 − retryPeriod, as the sidecar
counts it; none when that is under 1ms), and none for your own command, which may not post;
"" is none; else the value as given.
*/}}
{{- define "leasehold.exampleDrainTimeout" -}}
{{- $d := toString .Values.app.drainTimeout -}}
{{- if and (eq $d "auto") (not .Values.app.command) -}}
{{- $max := include "leasehold.maxDrainMs" . | atoi -}}
{{- if ge $max 1 }}{{ include "leasehold.showMs" $max }}{{ end -}}
{{- else -}}
{{- if ne $d "auto" }}{{ $d }}{{ end -}}
{{- end -}}
{{- end }}

{{/* renewDeadline/2 − retryPeriod in milliseconds (src/sidecar/app-drain.ts, maxDrainMs); may be negative. */}}
{{- define "leasehold.maxDrainMs" -}}
{{- $v := .Values.leasehold -}}
{{- $renew := include "leasehold.milliseconds" (dict "name" "leasehold.renewDeadline" "value" $v.renewDeadline) | atoi -}}
{{- $retry := include "leasehold.milliseconds" (dict "name" "leasehold.retryPeriod" "value" $v.retryPeriod) | atoi -}}
{{- sub (div $renew 2) $retry -}}
{{- end }}

{{/*
Refuses, at template time, a drain timeout the sidecar would refuse at start (longer than
renewDeadline/2 − retryPeriod): without this every pod's sidecar exits 2 in a crash loop.
  include "leasehold.checkDrain" (dict "root" $root "name" "drain.timeout" "value" "2s")
*/}}
{{- define "leasehold.checkDrain" -}}
{{- $text := toString .value -}}
{{- /* All zeros is the sidecar's "off": nothing to check. */ -}}
{{- if regexMatch "[1-9]" $text -}}
{{- $ms := include "leasehold.milliseconds" (dict "name" .name "value" $text) | atoi -}}
{{- $max := include "leasehold.maxDrainMs" .root | atoi -}}
{{- if gt $ms $max -}}
{{- $shown := ternary (include "leasehold.showMs" (max $max 1)) (printf "%dms, so none fits" $max) (ge $max 1) -}}
{{- fail (printf "%s %q must be at most leasehold.renewDeadline/2 − leasehold.retryPeriod (%s): the release must still be sent before the renew deadline; raise leasehold.renewDeadline for a longer drain" .name $text $shown) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
The name of the fencing ValidatingAdmissionPolicy and its binding (fencing.resources): both are
cluster-scoped, so the name holds the namespace; dots keep two releases' names apart.
*/}}
{{- define "leasehold.fencingPolicyName" -}}
{{- printf "%s.%s.fencing.leasehold.io" (include "leasehold.fullname" .) .Release.Namespace }}
{{- end }}
