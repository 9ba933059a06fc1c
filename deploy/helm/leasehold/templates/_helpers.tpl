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
