import { SIDECAR_NAME, STATUS_MOUNT, STATUS_VOLUME } from './annotations.js';
import type { InjectionSettings, SidecarDefaults } from './injection-settings.js';

/**
 * The injected container: the same container the chart's `leasehold.sidecar` template renders
 * (deploy/helm/leasehold/templates/_helpers.tpl), with the same defaults (values.yaml), so a
 * pod behaves alike whichever way it got its sidecar. A native sidecar is the same container
 * with restartPolicy Always, placed among the init containers.
 */
export function sidecarContainer(s: InjectionSettings, d: SidecarDefaults): Record<string, unknown> {
  // In the node's network a wildcard address would open the port on every interface of the node.
  // The kubelet probes from the node's network too, so on loopback it still reaches the sidecar.
  const host = s.hostNetwork ? '127.0.0.1' : '0.0.0.0';
  const probeHost = s.hostNetwork ? { host } : {};
  return {
    name: SIDECAR_NAME,
    image: d.image,
    imagePullPolicy: d.imagePullPolicy,
    ...(s.native ? { restartPolicy: 'Always' } : {}),
    args: [
      'sidecar',
      '--backend=kubernetes',
      `--lease=${s.lease}`,
      // Shard mode: a member of the group named by --lease; readiness follows its session, and a
      // stopping member always gives its shards up (the chart's shards.count renders the same).
      ...(s.group ? [`--shards=${s.group.shards}`, `--max-members=${s.group.maxMembers}`] : []),
      `--lease-duration=${s.leaseDuration}`,
      `--renew-deadline=${s.renewDeadline}`,
      `--retry-period=${s.retryPeriod}`,
      ...(s.group ? [] : ['--release-on-exit=true', `--ready-when=${s.readyWhen}`]),
      `--status-dir=${STATUS_MOUNT}`,
      `--listen=${host}:${s.port}`,
      '--log-format=json',
      ...(s.podLabel ? ['--pod-label'] : []),
      ...s.health.args,
    ],
    // The identity is the pod's name and the Lease lives in the pod's namespace. Both come from
    // the downward API: a pod made from generateName has no name yet at admission.
    env: [
      { name: 'LEASEHOLD_IDENTITY', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'LEASEHOLD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ],
    ports: [{ name: SIDECAR_NAME, containerPort: s.port, protocol: 'TCP' }],
    livenessProbe: { httpGet: { ...probeHost, path: '/healthz', port: s.port }, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3 },
    readinessProbe: { httpGet: { ...probeHost, path: '/readyz', port: s.port }, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 1 },
    volumeMounts: [{ name: STATUS_VOLUME, mountPath: STATUS_MOUNT }],
    // Non-root whatever the pod says: the image's own user, no privilege, nothing written
    // outside the status volume.
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
  };
}

/** The status volume, as the chart's `leasehold.volume`: in memory, small. */
export const statusVolume = { name: STATUS_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } };
