{{/*
Injection by admission policy (injection.mode=policy, issue 44): the CEL shared by the
MutatingAdmissionPolicy (admission-policy.yaml) and the ValidatingAdmissionPolicy beside it
(validating-policy.yaml). Each reads the pod's settings the way src/operator/injection-settings.ts
and probe-translation.ts do; they are written once here so that the mutation and the refusals
cannot disagree on what a pod's annotations mean. test/kubernetes/policy-parity.test.ts creates
one table of pods through the webhook and through these policies and finds them equal.

Every expression of the mutating policy must evaluate without error whatever the pod says: a CEL
error there refuses the pod with the API server's words, before the validating policy could name
the annotation. So a value that could not be parsed falls back to its default in the mutation,
and the validating policy refuses it.
*/}}

{{/* The pods this install injects: CREATE of a pod, labelled with its inject value. */}}
{{- define "lho.policy.match" -}}
matchConstraints:
  resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
failurePolicy: {{ .Values.webhook.failurePolicy }}
{{- end }}

{{/* The namespace rules of the webhook configuration (webhook.yaml), for a binding's matchResources. */}}
{{- define "lho.policy.matchResources" -}}
matchResources:
  objectSelector:
    matchLabels:
      leasehold.io/inject: {{ .Values.webhook.injectValue | quote }}
  namespaceSelector:
    matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: NotIn
        values: {{ concat (list "kube-system" .Release.Namespace) .Values.webhook.excludeNamespaces | toJson }}
      {{- if .Values.webhook.namespaceOptIn }}
      - key: leasehold.io/injection
        operator: In
        values: ["enabled"]
      {{- end }}
{{- end }}

{{/*
The variables both policies read, in dependency order. `object` is the pod: as sent in the
mutating policy, as mutated in the validating one, hence the filters on the sidecar's own name.
*/}}
{{- define "lho.policy.variables" -}}
- name: annotations
  expression: "object.metadata.?annotations.orValue({})"
# The lease a pod names none of: its workload's (src/operator/lease-name.ts), '' when none.
- name: controllers
  expression: "object.metadata.?ownerReferences.orValue([]).filter(r, r.?controller.orValue(false) == true && r.?name.orValue('') != '')"
- name: templateHash
  expression: "object.metadata.?labels[?'pod-template-hash'].orValue('')"
# True when the API server named the pod from its generateName (a 5-character suffix after at most
# 58 characters of it): it does so after the mutating policy and before the validating one, and
# the webhook never sees that name, so the lease is derived from generateName in both.
- name: generatedName
  expression: >-
    [object.metadata.?generateName.orValue('')].map(g, g != '' && object.metadata.?name.orValue('') != ''
      && [size(g) > 58 ? g.substring(0, 58) : g].map(b, object.metadata.name.startsWith(b) && size(object.metadata.name) == size(b) + 5)[0])[0]
- name: derivedLease
  expression: >-
    size(variables.controllers) > 0
    ? (variables.controllers[0].?kind.orValue('') == 'ReplicaSet' && variables.templateHash != ''
        && variables.controllers[0].name.endsWith('-' + variables.templateHash)
        && size(variables.controllers[0].name) > size(variables.templateHash) + 1
      ? variables.controllers[0].name.substring(0, size(variables.controllers[0].name) - size(variables.templateHash) - 1)
      : variables.controllers[0].name)
    : object.metadata.?name.orValue('') != '' && !variables.generatedName ? object.metadata.name
    : object.metadata.?generateName.orValue('').find('^.*[^-]')
- name: leaseGiven
  expression: "'leasehold.io/lease' in variables.annotations"
- name: lease
  expression: "variables.annotations[?'leasehold.io/lease'].orValue(variables.derivedLease)"
- name: leaseDuration
  expression: "variables.annotations[?'leasehold.io/lease-duration'].orValue('15s')"
- name: renewDeadline
  expression: "variables.annotations[?'leasehold.io/renew-deadline'].orValue('10s')"
- name: retryPeriod
  expression: "variables.annotations[?'leasehold.io/retry-period'].orValue('2s')"
- name: readyWhen
  expression: "variables.annotations[?'leasehold.io/ready-when'].orValue('elected-any')"
- name: podLabel
  expression: "variables.annotations[?'leasehold.io/pod-label'].orValue('false') == 'true'"
- name: group
  expression: "'leasehold.io/shards' in variables.annotations"
- name: shardsText
  expression: "variables.annotations[?'leasehold.io/shards'].orValue('')"
- name: maxMembersText
  expression: "variables.annotations[?'leasehold.io/max-members'].orValue('64')"
# As the webhook writes them: String(Number(text)), so "08" is 8.
- name: shards
  expression: "variables.shardsText.matches('^[0-9]{1,5}$') ? string(int(variables.shardsText)) : variables.shardsText"
- name: maxMembers
  expression: "variables.maxMembersText.matches('^[0-9]{1,5}$') ? string(int(variables.maxMembersText)) : variables.maxMembersText"
- name: nativeText
  expression: "variables.annotations[?'leasehold.io/native-sidecar'].orValue({{ toString .Values.nativeSidecar | squote }})"
# The API servers that serve these policies (1.36 and later) all support native sidecars: "auto" is native.
- name: native
  expression: "variables.nativeText == 'true' || variables.nativeText == 'auto'"
- name: portText
  expression: "variables.annotations[?'leasehold.io/port'].orValue('4040')"
- name: portValid
  expression: "variables.portText.matches('^[0-9]{1,5}$') && int(variables.portText) >= 1 && int(variables.portText) <= 65535"
- name: port
  expression: "variables.portValid ? int(variables.portText) : 4040"
- name: hostNetwork
  expression: "object.spec.?hostNetwork.orValue(false) == true"
- name: appNames
  expression: "object.spec.containers.filter(c, c.name != 'leasehold').map(c, c.name)"
- name: containersGiven
  expression: "'leasehold.io/containers' in variables.annotations"
# The app containers that get the status volume.
- name: mountTargets
  expression: "variables.containersGiven ? variables.annotations['leasehold.io/containers'].split(',').map(s, s.trim()) : variables.appNames"
# The app's health (src/operator/probe-translation.ts): the named container, else the first; its
# readinessProbe, else its livenessProbe.
- name: healthApps
  expression: >-
    'leasehold.io/health-container' in variables.annotations
    ? object.spec.containers.filter(c, c.name != 'leasehold' && c.name == variables.annotations['leasehold.io/health-container'])
    : object.spec.containers.filter(c, c.name != 'leasehold')
- name: probes
  expression: >-
    size(variables.healthApps) == 0 ? []
    : has(variables.healthApps[0].readinessProbe) ? [variables.healthApps[0].readinessProbe]
    : has(variables.healthApps[0].livenessProbe) ? [variables.healthApps[0].livenessProbe]
    : []
- name: probeHandler
  expression: >-
    size(variables.probes) == 0 ? dyn({})
    : has(variables.probes[0].httpGet) ? dyn(variables.probes[0].httpGet)
    : has(variables.probes[0].tcpSocket) ? dyn(variables.probes[0].tcpSocket)
    : dyn({})
- name: probeIsHttp
  expression: "size(variables.probes) > 0 && has(variables.probes[0].httpGet)"
- name: probeIsTcp
  expression: "size(variables.probes) > 0 && !has(variables.probes[0].httpGet) && has(variables.probes[0].tcpSocket)"
# The probe's port as a number: -1 for the sidecar's own name or an undeclared name.
- name: probePortValue
  expression: "variables.probeIsHttp || variables.probeIsTcp ? variables.probeHandler.?port.orValue(-1) : -1"
- name: probePort
  expression: >-
    type(variables.probePortValue) == int ? int(variables.probePortValue)
    : string(variables.probePortValue).matches('^[0-9]{1,9}$') ? int(string(variables.probePortValue))
    : string(variables.probePortValue) == 'leasehold' ? -1
    : variables.healthApps[0].?ports.orValue([]).exists(q, q.?name.orValue('') == string(variables.probePortValue))
      ? variables.healthApps[0].ports.filter(q, q.?name.orValue('') == string(variables.probePortValue))[0].containerPort
    : -1
- name: probeHost
  expression: "string(variables.probeHandler.?host.orValue(''))"
- name: probeUsable
  expression: >-
    (variables.probeIsHttp || variables.probeIsTcp)
    && (variables.probeHost == '' || variables.probeHost in ['127.0.0.1', 'localhost'])
    && variables.probePort >= 0 && variables.probePort != variables.port
    && (!variables.probeIsHttp || (string(variables.probeHandler.?scheme.orValue('HTTP')).upperAscii() == 'HTTP'
        && size(variables.probeHandler.?httpHeaders.orValue([])) == 0))
- name: probePath
  expression: "string(variables.probeHandler.?path.orValue('/'))"
- name: probeSource
  expression: >-
    !variables.probeUsable ? ''
    : variables.probeIsHttp ? '--health-http=http://127.0.0.1:' + string(variables.probePort) + (variables.probePath.startsWith('/') ? '' : '/') + variables.probePath
    : '--health-tcp=' + string(variables.probePort)
# The probe's timings, the kubelet's default for each unset one; a timeout cut to the period.
- name: probePeriod
  expression: "size(variables.probes) > 0 && variables.probes[0].?periodSeconds.orValue(0) >= 1 ? variables.probes[0].periodSeconds : 10"
- name: probeTimeout
  expression: >-
    size(variables.probes) > 0 && variables.probes[0].?timeoutSeconds.orValue(0) >= 1
    ? (variables.probes[0].timeoutSeconds < variables.probePeriod ? variables.probes[0].timeoutSeconds : variables.probePeriod)
    : (1 < variables.probePeriod ? 1 : variables.probePeriod)
- name: healthTimings
  expression: >-
    [
      '--health-period=' + string(variables.probePeriod) + 's',
      '--health-timeout=' + string(variables.probeTimeout) + 's',
      '--health-initial-delay=' + string(size(variables.probes) > 0 && variables.probes[0].?initialDelaySeconds.orValue(-1) >= 0 ? variables.probes[0].initialDelaySeconds : 0) + 's',
      '--health-failure-threshold=' + string(size(variables.probes) > 0 && variables.probes[0].?failureThreshold.orValue(0) >= 1 ? variables.probes[0].failureThreshold : 3),
      '--health-success-threshold=' + string(size(variables.probes) > 0 && variables.probes[0].?successThreshold.orValue(0) >= 1 ? variables.probes[0].successThreshold : 1)
    ]
- name: healthText
  expression: "variables.annotations[?'leasehold.io/health'].orValue('auto')"
- name: healthArgs
  expression: >-
    variables.healthText == 'off' ? []
    : variables.healthText == 'auto' ? (variables.probeSource == '' ? [] : [variables.probeSource] + variables.healthTimings)
    : variables.healthText.matches('^tcp:[0-9]{1,5}$') ? ['--health-tcp=' + string(int(variables.healthText.substring(4)))] + variables.healthTimings
    : ['--health-http=' + variables.healthText] + variables.healthTimings
# The sidecar's arguments, as sidecarContainer() writes them (src/operator/sidecar-container.ts).
- name: args
  expression: >-
    ['sidecar', '--backend=kubernetes', '--lease=' + variables.lease]
    + (variables.group ? ['--shards=' + variables.shards, '--max-members=' + variables.maxMembers] : [])
    + ['--lease-duration=' + variables.leaseDuration, '--renew-deadline=' + variables.renewDeadline, '--retry-period=' + variables.retryPeriod]
    + (variables.group ? [] : ['--release-on-exit=true', '--ready-when=' + variables.readyWhen])
    + ['--status-dir=/leader', '--listen=' + (variables.hostNetwork ? '127.0.0.1' : '0.0.0.0') + ':' + string(variables.port), '--log-format=json']
    + (variables.podLabel ? ['--pod-label'] : [])
    + variables.healthArgs
{{- end }}

{{/*
The sidecar container as a typed value of the list it goes into (`Object.spec.containers` or
`Object.spec.initContainers`): the API server refuses an untyped one. The same fields, in the same
order, as sidecarContainer().
  include "lho.policy.container" (dict "T" "Object.spec.containers" "native" false "root" $)
*/}}
{{- define "lho.policy.container" -}}
{{- $t := .T -}}
{{- $probe := printf "%s.livenessProbe" $t -}}
{{- $ready := printf "%s.readinessProbe" $t -}}
{{ $t }}{
  name: 'leasehold',
  image: {{ include "lho.image" .root | squote }},
  imagePullPolicy: {{ .root.Values.image.pullPolicy | squote }},
  {{- if .native }}
  restartPolicy: 'Always',
  {{- end }}
  args: variables.args,
  env: [
    {{ $t }}.env{name: 'LEASEHOLD_IDENTITY', valueFrom: {{ $t }}.env.valueFrom{fieldRef: {{ $t }}.env.valueFrom.fieldRef{fieldPath: 'metadata.name'}}},
    {{ $t }}.env{name: 'LEASEHOLD_NAMESPACE', valueFrom: {{ $t }}.env.valueFrom{fieldRef: {{ $t }}.env.valueFrom.fieldRef{fieldPath: 'metadata.namespace'}}}
  ],
  ports: [{{ $t }}.ports{name: 'leasehold', containerPort: variables.port, protocol: 'TCP'}],
  livenessProbe: variables.hostNetwork
    ? {{ $probe }}{httpGet: {{ $probe }}.httpGet{host: '127.0.0.1', path: '/healthz', port: variables.port}, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3}
    : {{ $probe }}{httpGet: {{ $probe }}.httpGet{path: '/healthz', port: variables.port}, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3},
  readinessProbe: variables.hostNetwork
    ? {{ $ready }}{httpGet: {{ $ready }}.httpGet{host: '127.0.0.1', path: '/readyz', port: variables.port}, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 1}
    : {{ $ready }}{httpGet: {{ $ready }}.httpGet{path: '/readyz', port: variables.port}, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 1},
  volumeMounts: [{{ $t }}.volumeMounts{name: 'leasehold-status', mountPath: '/leader'}],
  securityContext: {{ $t }}.securityContext{
    runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
    capabilities: {{ $t }}.securityContext.capabilities{drop: ['ALL']},
    seccompProfile: {{ $t }}.securityContext.seccompProfile{type: 'RuntimeDefault'}
  },
  resources: {{ $t }}.resources{requests: {'cpu': '10m', 'memory': '32Mi'}, limits: {'memory': '64Mi'}}
}
{{- end }}

{{/*
A duration annotation's value (a `[x].map(name, ...)[0]` binds a name: this API server's CEL has no cel.bind) in milliseconds, as parseDuration() and durationRangeError()
(src/config/duration.ts) judge it: -3 when it is no duration, -1 when a part is finer than a
millisecond, -2 when it is past 2^31 - 1 ms (the longest a timer can wait). Integer arithmetic
on the digits, as the webhook's: a part's fraction of more than 7 significant digits is never
whole milliseconds, even in hours, and a part of more than 10 digits is past the limit in any unit.
  include "lho.policy.durationMs" "variables.leaseDuration"
*/}}
{{- define "lho.policy.durationMs" -}}
[{{ . }}.trim()].map(t,
  !t.matches('^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$') ? -3
  : [t.findAll('[0-9]+(\\.[0-9]+)?(ms|s|m|h)').map(c,
      [c.find('(ms|s|m|h)$')].map(unit,
      [unit == 'ms' ? 1 : unit == 's' ? 1000 : unit == 'm' ? 60000 : 3600000].map(mult,
      [c.find('^[0-9]+').find('[1-9][0-9]*')].map(whole,
      [c.find('\\.[0-9]*[1-9]')].map(frac,
        size(frac) > 8 ? -1
        : size(whole) > 10 ? -2
        : [[1, 10, 100, 1000, 10000, 100000, 1000000, 10000000][size(frac) == 0 ? 0 : size(frac) - 1]].map(den,
            [size(frac) == 0 ? 0 : int(frac.substring(1)) * mult].map(num,
              num % den != 0 ? -1
              : [(whole == '' ? 0 : int(whole)) * mult + num / den].map(v, v > 2147483647 ? -2 : v)[0])[0])[0])[0])[0])[0])[0])].map(parts,
    parts.exists(p, p == -1) ? -1
    : parts.exists(p, p == -2) ? -2
    : [parts.sum()].map(sum, sum > 2147483647 ? -2 : sum)[0])[0])[0]
{{- end }}

{{/* formatDuration() of src/config/duration.ts: 15000 is "15s", 500 "500ms", 90000 "1m30s". */}}
{{- define "lho.policy.formatMs" -}}
[{{ . }}].map(v, v < 1000 || v % 1000 != 0 ? string(v) + 'ms' : v / 1000 < 60 ? string(v / 1000) + 's' : (v / 1000) % 60 == 0 ? string(v / 60000) + 'm' : string(v / 60000) + 'm' + string((v / 1000) % 60) + 's')[0]
{{- end }}
