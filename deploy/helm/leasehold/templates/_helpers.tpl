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

{{/* The Lease every candidate of this release competes for. */}}
{{- define "leasehold.leaseName" -}}
{{- default (include "leasehold.fullname" .) .Values.leasehold.lease }}
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
Pods that include it need the "leader" emptyDir volume ({{ include "leasehold.volume" . }}),
a ServiceAccount bound to this chart's Role, and the app container mounting /leader.
*/}}
{{- define "leasehold.sidecar" -}}
{{- $root := .root -}}
{{- $v := $root.Values.leasehold -}}
{{- include "leasehold.checkTimings" $root -}}
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
    - --lease-duration={{ $v.leaseDuration }}
    - --renew-deadline={{ $v.renewDeadline }}
    - --retry-period={{ $v.retryPeriod }}
    - --release-on-exit={{ $v.releaseOnExit }}
    - --ready-when={{ $v.readyWhen }}
    - --status-dir=/leader
    - --listen=0.0.0.0:{{ $v.port }}
    - --log-format={{ $v.logFormat }}
    {{- if $root.Values.podLabel.enabled }}
    - --pod-label
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
leaseDuration > renewDeadline > 1.2 × retryPeriod (client-go's JitterFactor) > 0. Without this the
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
{{- /* renewDeadline > 1.2 × retryPeriod, in integers: 5 × renewDeadline > 6 × retryPeriod. */ -}}
{{- if le (mul $renew 5) (mul $retry 6) -}}
{{- $jittered := printf "%vms" (divf (mul $retry 6) 5) -}}
{{- if not (mod (mul $retry 6) 5) }}{{ $jittered = include "leasehold.showMs" (div (mul $retry 6) 5) }}{{ end -}}
{{- fail (printf "leasehold.renewDeadline must be greater than leasehold.retryPeriod × 1.2 (client-go's JitterFactor), so the leader gets more than one retry before it steps down (got renewDeadline %s, retryPeriod %s × 1.2 = %s)" (include "leasehold.showMs" $renew) (include "leasehold.showMs" $retry) $jittered) -}}
{{- end -}}
{{- end }}
