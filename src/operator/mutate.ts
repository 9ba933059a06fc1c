import { InvalidConfigError, describeError, isLeaseholdError } from '../errors.js';
import {
  INJECTED_LEASE,
  INJECTED_MARK,
  INJECTED_MAX_MEMBERS,
  INJECTED_POD_LABEL,
  INJECTED_SHARDS,
  INJECT_LABEL,
  SIDECAR_NAME,
  STATUS_MOUNT,
  STATUS_VOLUME,
} from './annotations.js';
import { hasValidMark, injectionMark, serviceAccountOf } from './injection-mark.js';
import { injectionSettings, type InjectorDefaults } from './injection-settings.js';
import type { Pod } from './pod-types.js';
import { sidecarContainer, statusVolume } from './sidecar-container.js';

/**
 * One RFC 6902 operation. The injector adds, and removes only the shard-group annotations of its
 * own that a lease's candidate came with: they would claim a grant the mark does not sign.
 */
export interface PatchOp {
  op: 'add' | 'remove';
  path: string;
  /** What an "add" writes; none for a "remove". */
  value?: unknown;
}

/** A JSON Pointer segment (RFC 6901): '~' and '/' escaped. */
const seg = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** True when the pod has a container or init container by the sidecar's name (injected, or looking so). */
export function alreadyInjected(pod: Pod): boolean {
  const spec = pod.spec ?? {};
  return [...(spec.containers ?? []), ...(spec.initContainers ?? [])].some((c) => c.name === SIDECAR_NAME);
}

/**
 * The JSONPatch that injects the sidecar into `pod`, or [] when this webhook already injected it
 * (a copy of an injected pod, same namespace and ServiceAccount). Throws an InvalidConfigError
 * (naming the annotation and the rule) when the pod cannot be injected. A pod that has a
 * container by the sidecar's name without a valid mark is refused rather than re-injected: a
 * second container of that name is invalid, and renaming the pod's own is its owner's choice.
 */
export function injectionPatch(pod: Pod, defaults: InjectorDefaults): PatchOp[] {
  return injection(pod, defaults).patch;
}

/**
 * The patch (as injectionPatch) and the warnings for whoever creates the pod: a probe of the app
 * the injector could not use as its health (src/operator/probe-translation.ts) is said, not refused.
 */
export function injection(pod: Pod, defaults: InjectorDefaults): { patch: PatchOp[]; warnings: string[] } {
  if (alreadyInjected(pod)) {
    if (hasValidMark(pod, defaults.marks.verifying())) return { patch: [], warnings: [] };
    throw new InvalidConfigError(
      `the pod has a container named ${JSON.stringify(SIDECAR_NAME)} but no valid annotation ${INJECTED_MARK}, which only this operator's webhook writes: rename that container, or remove the label ${INJECT_LABEL} to run your own sidecar`,
    );
  }
  const spec = pod.spec ?? {};
  if ((spec.volumes ?? []).some((v) => v.name === STATUS_VOLUME)) {
    throw new InvalidConfigError(`the pod already has a volume named ${STATUS_VOLUME}: the injector needs that name for the status volume`);
  }
  if (spec.automountServiceAccountToken === false) {
    throw new InvalidConfigError(
      "spec.automountServiceAccountToken is false: the injected sidecar authenticates with the pod's ServiceAccount token; remove it or set it true",
    );
  }
  const s = injectionSettings(pod, defaults);
  const ops: PatchOp[] = [];
  const container = sidecarContainer(s, defaults);
  // A native sidecar goes after the pod's own init containers: they run before the campaign,
  // as they run before a plain sidecar.
  if (s.native)
    ops.push(
      spec.initContainers ? { op: 'add', path: '/spec/initContainers/-', value: container } : { op: 'add', path: '/spec/initContainers', value: [container] },
    );
  else ops.push({ op: 'add', path: '/spec/containers/-', value: container });
  ops.push(spec.volumes ? { op: 'add', path: '/spec/volumes/-', value: statusVolume } : { op: 'add', path: '/spec/volumes', value: [statusVolume] });
  const mount = { name: STATUS_VOLUME, mountPath: STATUS_MOUNT, readOnly: true };
  (spec.containers ?? []).forEach((c, i) => {
    if (!s.containers.includes(c.name)) return;
    ops.push(
      c.volumeMounts
        ? { op: 'add', path: `/spec/containers/${i}/volumeMounts/-`, value: mount }
        : { op: 'add', path: `/spec/containers/${i}/volumeMounts`, value: [mount] },
    );
  });
  const namespace = pod.metadata?.namespace ?? '';
  const fields = { namespace, serviceAccount: serviceAccountOf(pod), lease: s.lease, podLabel: s.podLabel, ...(s.group ? { group: s.group } : {}) };
  const mark = injectionMark(defaults.marks.signing(), fields);
  const marks: Record<string, string> = { [INJECTED_LEASE]: s.lease, [INJECTED_POD_LABEL]: String(s.podLabel) };
  if (s.group) {
    marks[INJECTED_SHARDS] = String(s.group.shards);
    marks[INJECTED_MAX_MEMBERS] = String(s.group.maxMembers);
  }
  marks[INJECTED_MARK] = mark;
  const annotations = pod.metadata?.annotations;
  if (!annotations) ops.push({ op: 'add', path: '/metadata/annotations', value: marks });
  else {
    for (const [k, v] of Object.entries(marks)) ops.push({ op: 'add', path: `/metadata/annotations/${seg(k)}`, value: v });
    // A lease's candidate that came with a group's counts: gone, so its claim is what the mark signs.
    if (!s.group)
      for (const k of [INJECTED_SHARDS, INJECTED_MAX_MEMBERS]) if (k in annotations) ops.push({ op: 'remove', path: `/metadata/annotations/${seg(k)}` });
  }
  return { patch: ops, warnings: s.health.warning ? [s.health.warning] : [] };
}

/** The parts of an admission.k8s.io/v1 AdmissionReview the webhook reads. */
export interface AdmissionReview {
  apiVersion?: string;
  kind?: string;
  request?: { uid?: string; kind?: { kind?: string }; operation?: string; object?: Pod; namespace?: string };
}

export interface AdmissionReviewResponse {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: { uid: string; allowed: boolean; patchType?: 'JSONPatch'; patch?: string; warnings?: string[]; status?: { code: number; message: string } };
}

/**
 * The answer to one AdmissionReview: the pod with its patch, the pod unchanged (not a pod
 * creation, already injected), or refused with the rule it breaks. A malformed review is an
 * error for the server to answer with 400: it did not come from an API server.
 */
export function review(body: unknown, defaults: InjectorDefaults): AdmissionReviewResponse {
  const r = body as AdmissionReview;
  if (!r || typeof r !== 'object' || r.kind !== 'AdmissionReview' || !r.request || typeof r.request.uid !== 'string') {
    throw new InvalidConfigError('not an admission.k8s.io/v1 AdmissionReview with a request.uid');
  }
  const uid = r.request.uid;
  const answer = (response: Omit<AdmissionReviewResponse['response'], 'uid'>): AdmissionReviewResponse => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid, ...response },
  });
  const pod = r.request.object;
  if (r.request.kind?.kind !== 'Pod' || r.request.operation !== 'CREATE' || !pod) return answer({ allowed: true });
  // The request's namespace is where the pod is created (the API server refuses an object naming
  // another): the mark is signed for it.
  if (r.request.namespace) pod.metadata = { ...pod.metadata, namespace: r.request.namespace };
  try {
    const { patch, warnings } = injection(pod, defaults);
    if (patch.length === 0) return answer({ allowed: true });
    return answer({
      allowed: true,
      patchType: 'JSONPatch',
      patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
      ...(warnings.length > 0 ? { warnings } : {}),
    });
  } catch (err) {
    if (!isLeaseholdError(err) || err.code !== 'LEASEHOLD_ERR_INVALID_CONFIG') throw err;
    return answer({ allowed: false, status: { code: 400, message: `leasehold: ${describeError(err)}` } });
  }
}
