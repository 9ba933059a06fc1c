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

{{/*
How labelled pods get the sidecar, resolved: "policy" or "webhook". "auto" (the default) is policy when the API
server serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36+; `helm
template` reads it from --api-versions), else webhook. Every template that differs by mode reads
this, never .Values.injection.mode: the webhook, its certificates and Service, and the policies.
*/}}
{{- define "leasehold-operator.injectionMode" -}}
{{- $mode := .Values.injection.mode | default "auto" -}}
{{- if eq $mode "auto" -}}
{{- ternary "policy" "webhook" (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy") -}}
{{- else -}}
{{- $mode -}}
{{- end -}}
{{- end }}

{{/*
Whether the sidecar guard (sidecar-guard.yaml) is installed: "true" or "". Only under
failurePolicy Fail, and where the API server serves admissionregistration.k8s.io/v1
ValidatingAdmissionPolicy. At install and upgrade Helm lists every kind the cluster serves (Pod
among them), so discovery answers; `helm template` has no cluster and lists no kinds (unless
--api-versions names some), so there the Kubernetes version decides (1.30, where that API is GA
and served by default). Never the injection mode: the guard must be the same object in both.
*/}}
{{- define "leasehold-operator.sidecarGuard" -}}
{{- $caps := .Capabilities.APIVersions -}}
{{- $served := $caps.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" -}}
{{- if not ($caps.Has "v1/Pod") -}}
{{- $served = or $served (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- if and (eq (toString .Values.webhook.failurePolicy) "Fail") $served -}}
true
{{- end -}}
{{- end }}

{{/* The Secret the operator serves from: its own (`-tls`), or the one cert-manager writes (`-cert`). */}}
{{- define "lho.secret" -}}
{{- printf "%s-%s" (include "lho.fullname" .) (ternary "cert" "tls" .Values.certManager.enabled) -}}
{{- end }}

{{/* The Secret keeping the key of the injection marks: the operator makes it on first start. */}}
{{- define "lho.markSecret" -}}
{{- printf "%s-mark" (include "lho.fullname" .) -}}
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
A duration value in whole milliseconds, as the operator parses its flags (parseDuration,
durationRangeError); fails, naming the value, when the operator would refuse it (finer than 1ms,
or longer than a timer can wait). Integer arithmetic on the digits, so "1.005s" is exactly 1005;
the same rules as the leasehold chart's "leasehold.milliseconds".
  include "lho.milliseconds" (dict "name" "resync" "value" "1.5s")
*/}}
{{- define "lho.milliseconds" -}}
{{- $max := 2147483647 -}}
{{- $text := toString .value -}}
{{- $total := 0 -}}
{{- $tooLong := false -}}
{{- $notWhole := false -}}
{{- range regexFindAll "[0-9.]+(ms|s|m|h)" $text -1 -}}
{{- $digits := splitList "." (regexFind "^[0-9.]+" .) -}}
{{- $scale := get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) (regexFind "(ms|s|m|h)$" .) -}}
{{- /* Leading zeros change nothing ("015s" is 15s to the operator); past 10 digits is past the limit whatever the unit, and atoi would overflow. */ -}}
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
{{- fail (printf "%s %q must be a whole number of milliseconds (no finer than 1ms): the operator would exit 2 on every start" .name $text) -}}
{{- end -}}
{{- if or $tooLong (lt $total 1) -}}
{{- fail (printf "%s %q must be from 1ms to %dms (2^31 - 1 ms, the longest a timer can wait): the operator would exit 2 on every start" .name $text $max) -}}
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
{{- $lease := include "lho.milliseconds" (dict "name" "leaderElection.leaseDuration" "value" $e.leaseDuration) | atoi -}}
{{- $renew := include "lho.milliseconds" (dict "name" "leaderElection.renewDeadline" "value" $e.renewDeadline) | atoi -}}
{{- $retry := include "lho.milliseconds" (dict "name" "leaderElection.retryPeriod" "value" $e.retryPeriod) | atoi -}}
{{- $_ := include "lho.milliseconds" (dict "name" "resync" "value" .Values.resync) -}}
{{- if le $lease $renew -}}
{{- fail (printf "leaderElection.leaseDuration %q must be greater than leaderElection.renewDeadline %q: the elected replica must give up before another may take over" $e.leaseDuration $e.renewDeadline) -}}
{{- end -}}
{{- /* renewDeadline > 1.2 × retryPeriod, in integers: 5 × renewDeadline > 6 × retryPeriod. */ -}}
{{- if le (mul $renew 5) (mul $retry 6) -}}
{{- fail (printf "leaderElection.renewDeadline %q must be greater than 1.2 × leaderElection.retryPeriod %q: the elected replica needs more than one jittered retry before it gives up" $e.renewDeadline $e.retryPeriod) -}}
{{- end -}}
{{- range $name := list "certValidity" "caValidity" -}}
{{- if lt (include "lho.seconds" (get $.Values $name) | float64) 60.0 -}}
{{- fail (printf "%s %q must be at least 1m, as the operator's --%s is" $name (get $.Values $name) (ternary "cert-validity" "ca-validity" (eq $name "certValidity"))) -}}
{{- end -}}
{{- end -}}
{{- if le (include "lho.seconds" .Values.caValidity | float64) (include "lho.seconds" .Values.certValidity | float64) -}}
{{- fail (printf "caValidity %q must be longer than certValidity %q: the CA signs the serving certificates" .Values.caValidity .Values.certValidity) -}}
{{- end -}}
{{- /*
Another install's webhook selecting the same pods: each would be sent to both, and the second
refuses what the first injected (issue 36). lookup reads the cluster at install and upgrade;
helm template renders without it.
*/ -}}
{{- $self := include "lho.fullname" . -}}
{{- $value := toString .Values.webhook.injectValue -}}
{{- range $wc := (lookup "admissionregistration.k8s.io/v1" "MutatingWebhookConfiguration" "" "").items -}}
{{- if ne $wc.metadata.name $self -}}
{{- range $wc.webhooks -}}
{{- if and (eq .name "inject.leasehold.io") (eq (toString (dig "objectSelector" "matchLabels" "leasehold.io/inject" "" .)) $value) -}}
{{- fail (printf "webhook.injectValue %q: the webhook configuration %s, another leasehold operator install, already injects pods labelled leasehold.io/inject=%s; each such pod would be sent to both, and the second would refuse what the first injected: give this install a value of its own (--set webhook.injectValue=...)" $value $wc.metadata.name $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /*
The same for an install in policy mode: its MutatingAdmissionPolicyBinding (named as the install,
labelled as the chart's) selects the pods by the same label. Asked only of an API server that
serves the kind (Kubernetes 1.36 and later); helm template has no such server.
*/ -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding" -}}
{{- range $b := (lookup "admissionregistration.k8s.io/v1" "MutatingAdmissionPolicyBinding" "" "").items -}}
{{- if and (ne $b.metadata.name $self) (eq (toString (dig "metadata" "labels" "app.kubernetes.io/name" "" $b)) "leasehold-operator") (eq (toString (dig "spec" "matchResources" "objectSelector" "matchLabels" "leasehold.io/inject" "" $b)) $value) -}}
{{- fail (printf "webhook.injectValue %q: the MutatingAdmissionPolicyBinding %s, another leasehold operator install (injection by policy), already injects pods labelled leasehold.io/inject=%s; both installs would inject, refuse and grant the same pods: give this install a value of its own (--set webhook.injectValue=...)" $value $b.metadata.name $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /*
A switch from the webhook to the policy by an upgrade from a chart without the sidecar guard: the
guard would be created in the same upgrade as the switch, and the API server puts a new policy in
effect up to a second later, so it would not yet guard the switch's window (docs/operator.md, "Pod
creation during a switch"). Refused: upgrade in webhook mode first, which installs the guard.
*/ -}}
{{- if and (eq (include "leasehold-operator.injectionMode" .) "policy") (include "leasehold-operator.sidecarGuard" .) -}}
{{- $guard := printf "%s-sidecar-guard" $self -}}
{{- if and (lookup "admissionregistration.k8s.io/v1" "MutatingWebhookConfiguration" "" $self) (not (and (lookup "admissionregistration.k8s.io/v1" "ValidatingAdmissionPolicy" "" $guard) (lookup "admissionregistration.k8s.io/v1" "ValidatingAdmissionPolicyBinding" "" $guard))) -}}
{{- $mode := toString (.Values.injection.mode | default "auto") -}}
{{- fail (printf "injection.mode %q switches this install from its webhook to the MutatingAdmissionPolicy, but its sidecar guard (ValidatingAdmissionPolicy and binding %s) is not installed yet: made in the same upgrade, it would not be in force while the webhook goes, and labelled pods could be admitted without the sidecar; upgrade with --set injection.mode=webhook first, then switch" $mode $guard) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.certManager.enabled (eq (include "leasehold-operator.injectionMode" .) "policy") -}}
{{- $mode := toString (.Values.injection.mode | default "auto") -}}
{{- $why := ternary "" " (auto, the default, picks it where the API server serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy)" (eq $mode "policy") -}}
{{- fail (printf "certManager.enabled is true, but injection.mode %q installs the MutatingAdmissionPolicy%s: no webhook, so no certificate for cert-manager to issue; set certManager.enabled=false, or injection.mode=webhook" $mode $why) -}}
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

{{/*
The ValidatingAdmissionPolicy the operator's bindings name (fencing.objectPolicies). Not the
leasehold chart's `<fullname>.<namespace>.fencing.leasehold.io`: that one is a release's, fencing its
own kinds, and a name shared with it would make two releases own one object.
*/}}
{{- define "lho.fencingPolicyName" -}}
{{- printf "%s.%s.operator-fencing.leasehold.io" (include "lho.fullname" .) .Release.Namespace -}}
{{- end }}
