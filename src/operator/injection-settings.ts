import { posix } from 'node:path';
import { durationRangeError, parseDuration } from '../config/duration.js';
import { validateKubernetesLeaseDuration, validateLeaseName, validateTimings, type Timings } from '../config/election-options.js';
import { InvalidConfigError, describeError } from '../errors.js';
import { isReadyWhen, type ReadyWhen } from '../sidecar/kubelet-probes.js';
import { ANNOTATION, SIDECAR_NAME, STATUS_MOUNT } from './annotations.js';
import { healthFlagsFromProbes, type HealthFlags } from './probe-translation.js';
import type { GroupCounts, MarkKeys } from './injection-mark.js';
import { MAX_MEMBER_SLOTS, MAX_SHARDS } from '../backends/group-store.js';
import { checkKubernetesGroupName } from '../backends/kubernetes/group-names.js';
import { workloadLeaseName } from './lease-name.js';
import { FENCED_BY_LABEL, parseFencedKinds } from './fence-objects.js';
import type { Pod } from './pod-types.js';

/** What the operator itself decides (its flags) about the container, as opposed to what each pod's annotations say. */
export interface SidecarDefaults {
  image: string;
  imagePullPolicy: string;
  /** The leasehold.io/native-sidecar default: "true", "false" or "auto" (native when the cluster supports it). */
  nativeSidecar: 'true' | 'false' | 'auto';
  /** Whether the API server supports native sidecars (Kubernetes 1.29+), for "auto". */
  clusterSupportsNativeSidecars: boolean;
}

/** The webhook's defaults: the container's, and the keys it marks what it injected with. */
export interface InjectorDefaults extends SidecarDefaults {
  /** The keys injection marks are signed and checked with (src/operator/mark-key.ts). */
  marks: MarkKeys;
}

/** The defaults of the annotations: the chart's values.yaml defaults, so both ways behave alike. */
export const ANNOTATION_DEFAULTS = {
  leaseDuration: '15s',
  renewDeadline: '10s',
  retryPeriod: '2s',
  readyWhen: 'elected-any',
  podLabel: 'false',
  port: '4040',
  /** With leasehold.io/shards: the sidecar's --max-members default (the chart's shards.maxMembers unset). */
  maxMembers: '64',
} as const;

export interface InjectionSettings {
  lease: string;
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
  readyWhen: ReadyWhen;
  podLabel: boolean;
  native: boolean;
  port: number;
  /**
   * The pod shares the node's network (spec.hostNetwork): the sidecar then listens on 127.0.0.1
   * only, where the kubelet's probes still reach it, instead of on every address of the node.
   */
  hostNetwork: boolean;
  /** The app containers that get the status volume, read-only at /leader. */
  containers: string[];
  /** The sidecar's --health-* arguments (src/operator/probe-translation.ts), and why none when a probe was not usable. */
  health: HealthFlags;
  /** Shard mode (leasehold.io/shards): the sidecar is a member of the group named by `lease`; undefined for a lease's candidate. */
  group?: GroupCounts;
}

/** One annotation breaking one rule: the message names both. */
function bad(annotation: string, value: string, rule: string): InvalidConfigError {
  return new InvalidConfigError(`annotation ${annotation} ${JSON.stringify(value)} is invalid: ${rule}`);
}

/**
 * A duration annotation, under the CLI's rules for its flag (parseDuration, durationRangeError):
 * the sidecar would refuse what this refuses, and exit 2 in a crash loop.
 */
function durationOf(annotation: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === null) throw bad(annotation, text, 'expected a duration such as 15s, 500ms or 1m30s');
  const range = durationRangeError(ms);
  if (range) throw bad(annotation, text, range);
  return ms;
}

function booleanOf(annotation: string, text: string): boolean {
  if (text !== 'true' && text !== 'false') throw bad(annotation, text, 'must be true or false');
  return text === 'true';
}

/**
 * The settings of one pod's sidecar from its annotations, each checked with the rules the CLI
 * applies to the flag it becomes. Throws one InvalidConfigError naming the annotation and the rule.
 */
export function injectionSettings(pod: Pod, defaults: SidecarDefaults): InjectionSettings {
  const a = pod.metadata?.annotations ?? {};
  const get = (key: keyof typeof ANNOTATION, fallback: string): string => a[ANNOTATION[key]] ?? fallback;

  const derived = workloadLeaseName(pod);
  const leaseText = a[ANNOTATION.lease] ?? derived;
  if (leaseText === null || leaseText === undefined) {
    throw new InvalidConfigError(`annotation ${ANNOTATION.lease} is required: the pod has no owner, name or generateName to derive a lease name from`);
  }
  try {
    validateLeaseName(leaseText);
  } catch (err) {
    const rule = ruleOf(err);
    if (a[ANNOTATION.lease] !== undefined) throw bad(ANNOTATION.lease, leaseText, rule);
    throw new InvalidConfigError(`the lease name derived from the pod's workload, ${JSON.stringify(leaseText)}, is invalid: ${rule}; set ${ANNOTATION.lease}`);
  }

  const leaseDuration = get('leaseDuration', ANNOTATION_DEFAULTS.leaseDuration);
  const renewDeadline = get('renewDeadline', ANNOTATION_DEFAULTS.renewDeadline);
  const retryPeriod = get('retryPeriod', ANNOTATION_DEFAULTS.retryPeriod);
  const timings: Timings = {
    leaseDurationMs: durationOf(ANNOTATION.leaseDuration, leaseDuration),
    renewDeadlineMs: durationOf(ANNOTATION.renewDeadline, renewDeadline),
    retryPeriodMs: durationOf(ANNOTATION.retryPeriod, retryPeriod),
  };
  try {
    validateTimings(timings);
  } catch (err) {
    throw new InvalidConfigError(
      `annotations ${ANNOTATION.leaseDuration} ${JSON.stringify(leaseDuration)}, ${ANNOTATION.renewDeadline} ${JSON.stringify(renewDeadline)} and ${ANNOTATION.retryPeriod} ${JSON.stringify(retryPeriod)} are invalid together: ${describeError(err)}`,
    );
  }
  try {
    validateKubernetesLeaseDuration(timings.leaseDurationMs);
  } catch (err) {
    throw bad(ANNOTATION.leaseDuration, leaseDuration, ruleOf(err));
  }

  const readyWhen = get('readyWhen', ANNOTATION_DEFAULTS.readyWhen);
  if (!isReadyWhen(readyWhen)) throw bad(ANNOTATION.readyWhen, readyWhen, 'must be leader or elected-any');
  const podLabel = booleanOf(ANNOTATION.podLabel, get('podLabel', ANNOTATION_DEFAULTS.podLabel));
  const group = groupOf(a, leaseText, a[ANNOTATION.lease] !== undefined, podLabel);
  checkFenceObjects(a, leaseText, group !== undefined);

  const nativeText = get('nativeSidecar', defaults.nativeSidecar);
  if (nativeText !== 'true' && nativeText !== 'false' && nativeText !== 'auto') throw bad(ANNOTATION.nativeSidecar, nativeText, 'must be true, false or auto');
  if (nativeText === 'true' && !defaults.clusterSupportsNativeSidecars) {
    throw bad(ANNOTATION.nativeSidecar, nativeText, 'this cluster does not support native sidecars (Kubernetes 1.29+): use false or auto');
  }
  const native = nativeText === 'true' || (nativeText === 'auto' && defaults.clusterSupportsNativeSidecars);

  const spec = pod.spec ?? {};
  const appContainers = (spec.containers ?? []).map((c) => c.name);
  const portText = get('port', ANNOTATION_DEFAULTS.port);
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) throw bad(ANNOTATION.port, portText, 'must be a port number from 1 to 65535');
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    if ((c.ports ?? []).some((p) => p.containerPort === port)) {
      throw bad(
        ANNOTATION.port,
        portText,
        `container ${JSON.stringify(c.name)} already declares port ${port}: the pod's containers share one network namespace`,
      );
    }
  }

  const containersText = a[ANNOTATION.containers];
  const containers = containersText === undefined ? appContainers : containersText.split(',').map((s) => s.trim());
  if (containersText !== undefined) {
    if (containers.some((c) => c === '')) throw bad(ANNOTATION.containers, containersText, 'must be a comma-separated list of container names');
    const unknown = containers.find((c) => !appContainers.includes(c));
    if (unknown !== undefined) {
      throw bad(
        ANNOTATION.containers,
        containersText,
        `the pod has no container ${JSON.stringify(unknown)} (it has ${appContainers.map((c) => JSON.stringify(c)).join(', ')})`,
      );
    }
  }
  for (const c of spec.containers ?? []) {
    if (!containers.includes(c.name)) continue;
    if (c.name === SIDECAR_NAME) continue;
    if ((c.volumeMounts ?? []).some((m) => samePath(m.mountPath, STATUS_MOUNT))) {
      throw new InvalidConfigError(
        `container ${JSON.stringify(c.name)} already mounts ${STATUS_MOUNT}: leave it out of ${ANNOTATION.containers}, or free ${STATUS_MOUNT} for the status volume`,
      );
    }
  }
  const hostNetwork = spec.hostNetwork === true;
  const health = healthFlagsFromProbes(pod, port);
  return {
    lease: leaseText,
    leaseDuration,
    renewDeadline,
    retryPeriod,
    readyWhen,
    podLabel,
    native,
    port,
    hostNetwork,
    containers,
    health,
    ...(group ? { group } : {}),
  };
}

/** A count annotation, under the CLI's rule for its flag (cmd/shard-flags.ts). */
function countOf(annotation: string, text: string, max: number): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > max) throw bad(annotation, text, `must be a whole number from 1 to ${max}`);
  return Number(text);
}

/**
 * Shard mode from leasehold.io/shards and leasehold.io/max-members, or undefined without them:
 * refused as `leasehold sidecar --shards` refuses its flags (cmd/shard-flags.ts), so the sidecar
 * never exits 2 in a crash loop, and an annotation that would mean nothing is refused, not ignored.
 */
function groupOf(a: Record<string, string>, lease: string, leaseGiven: boolean, podLabel: boolean): GroupCounts | undefined {
  const shardsText = a[ANNOTATION.shards];
  const maxText = a[ANNOTATION.maxMembers];
  if (shardsText === undefined) {
    if (maxText !== undefined) throw bad(ANNOTATION.maxMembers, maxText, `needs ${ANNOTATION.shards}: it bounds the members of a shard group`);
    return undefined;
  }
  const shards = countOf(ANNOTATION.shards, shardsText, MAX_SHARDS);
  const maxMembers = countOf(ANNOTATION.maxMembers, maxText ?? ANNOTATION_DEFAULTS.maxMembers, MAX_MEMBER_SLOTS);
  const notForGroups = `applies to a lease, not to a shard group (${ANNOTATION.shards})`;
  if (podLabel) {
    throw bad(ANNOTATION.podLabel, 'true', `${notForGroups}: a member is neither leader nor follower, so leasehold.io/role would say nothing true`);
  }
  const readyWhen = a[ANNOTATION.readyWhen];
  if (readyWhen !== undefined) {
    throw bad(
      ANNOTATION.readyWhen,
      readyWhen,
      `${notForGroups}: a member is ready while it holds a session in the group and its app is eligible, whoever owns which shard`,
    );
  }
  try {
    checkKubernetesGroupName(lease);
  } catch (err) {
    const rule = ruleOf(err);
    if (leaseGiven) throw bad(ANNOTATION.lease, lease, rule);
    throw new InvalidConfigError(`the group name derived from the pod's workload, ${JSON.stringify(lease)}, is invalid: ${rule}; set ${ANNOTATION.lease}`);
  }
  return { shards, maxMembers };
}

/**
 * leasehold.io/fence-objects, checked at admission as the reconciler reads it (so a pod is refused
 * now rather than reported later): the kinds' format, a lease, not a shard group (each shard is its
 * own Lease and token), and a lease name a label value can hold (it is the fenced-by label's value).
 * Whether this install makes bindings at all (--fence-objects-policy) is the reconciler's to report.
 */
function checkFenceObjects(a: Record<string, string>, lease: string, isGroup: boolean): void {
  const text = a[ANNOTATION.fenceObjects];
  if (text === undefined) return;
  parseFencedKinds(text);
  if (isGroup)
    throw bad(ANNOTATION.fenceObjects, text, `applies to a lease, not to a shard group (${ANNOTATION.shards}): each shard is its own Lease and token`);
  if (lease.length > 63) {
    throw bad(ANNOTATION.fenceObjects, text, `the lease name is ${lease.length} characters long: it is the value of the ${FENCED_BY_LABEL} label, at most 63`);
  }
}

/**
 * Whether two container paths name one directory: `//leader`, `/./leader`, `/leader/.` and
 * `/leader/` are all `/leader` to the runtime, and two mounts there would collide.
 */
function samePath(a: string, b: string): boolean {
  const norm = (p: string) => posix.normalize(p).replace(/(.)\/+$/, '$1');
  return norm(a) === norm(b);
}

/** The rule an option check broke, without the option's own name (the annotation is named instead). */
function ruleOf(err: unknown): string {
  return err instanceof InvalidConfigError && err.rule ? err.rule : describeError(err);
}
