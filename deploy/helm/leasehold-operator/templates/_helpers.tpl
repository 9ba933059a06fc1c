{{- define "lho.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains "leasehold-operator" .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-leasehold-operator" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "lho.selectorLabels" -}}
app.kubernetes.io/name: leasehold-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lho.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "lho.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret the operator serves from: its own (`-tls`), or the one cert-manager writes (`-cert`). */}}
{{- define "lho.secret" -}}
{{- printf "%s-%s" (include "lho.fullname" .) (ternary "cert" "tls" .Values.certManager.enabled) -}}
{{- end }}

{{- define "lho.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* A duration ("1m30s", "500ms") in seconds, as a float. */}}
{{- define "lho.seconds" -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9.]+(ms|s|m|h)" (toString .) -1 -}}
{{- $n := float64 (regexFind "^[0-9.]+" .) -}}
{{- $unit := regexFind "(ms|s|m|h)$" . -}}
{{- $total = addf $total (mulf $n (get (dict "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0) $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end }}

{{/*
Refuses values the operator would refuse at start (exit 2, in a crash loop), with the rule
and the values named: the election's timings keep the sidecar's rules (validateTimings:
leaseDuration > renewDeadline > 1.2 × retryPeriod > 0), the CA outlives its certificates, and
cert-manager gets durations it accepts.
*/}}
{{- define "lho.validate" -}}
{{- $e := .Values.leaderElection -}}
{{- $lease := include "lho.seconds" $e.leaseDuration | float64 -}}
{{- $renew := include "lho.seconds" $e.renewDeadline | float64 -}}
{{- $retry := include "lho.seconds" $e.retryPeriod | float64 -}}
{{- if le $retry 0.0 -}}
{{- fail (printf "leaderElection.retryPeriod %q must be greater than zero" $e.retryPeriod) -}}
{{- end -}}
{{- if le $lease $renew -}}
{{- fail (printf "leaderElection.leaseDuration %q must be greater than leaderElection.renewDeadline %q: the elected replica must give up before another may take over" $e.leaseDuration $e.renewDeadline) -}}
{{- end -}}
{{- if le $renew (mulf $retry 1.2) -}}
{{- fail (printf "leaderElection.renewDeadline %q must be greater than 1.2 × leaderElection.retryPeriod %q: the elected replica needs more than one jittered retry before it gives up" $e.renewDeadline $e.retryPeriod) -}}
{{- end -}}
{{- if le (include "lho.seconds" .Values.caValidity | float64) (include "lho.seconds" .Values.certValidity | float64) -}}
{{- fail (printf "caValidity %q must be longer than certValidity %q: the CA signs the serving certificates" .Values.caValidity .Values.certValidity) -}}
{{- end -}}
{{- if .Values.certManager.enabled -}}
{{- $c := .Values.certManager -}}
{{- $duration := include "lho.seconds" $c.duration | float64 -}}
{{- if lt $duration 3600.0 -}}
{{- fail (printf "certManager.duration %q must be at least 1h (cert-manager's minimum)" $c.duration) -}}
{{- end -}}
{{- if ge (include "lho.seconds" $c.renewBefore | float64) $duration -}}
{{- fail (printf "certManager.renewBefore %q must be less than certManager.duration %q: cert-manager renews that long before expiry" $c.renewBefore $c.duration) -}}
{{- end -}}
{{- if and (not $c.issuerRef.name) (le (include "lho.seconds" $c.caDuration | float64) $duration) -}}
{{- fail (printf "certManager.caDuration %q must be longer than certManager.duration %q: the chart's CA signs the serving certificate" $c.caDuration $c.duration) -}}
{{- end -}}
{{- end -}}
{{- end }}
