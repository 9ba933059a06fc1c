import { describeError } from '../errors.js';
import { ANNOTATION, SIDECAR_NAME, STATUS_VOLUME } from './annotations.js';
import { serviceAccountOf, type MarkFields } from './injection-mark.js';
import { injectionSettings, type SidecarDefaults } from './injection-settings.js';
import type { Container, Pod } from './pod-types.js';
import { sidecarContainer } from './sidecar-container.js';

/**
 * What a pod's sidecar earns in policy mode, where no webhook signs a mark: the grant's fields,
 * or why it earns nothing. docs/operator.md ("Grants without a mark") gives the threat model.
 */
export type PolicyClaim = { fields: MarkFields } | { reason: string };

/**
 * The flags that decide what a sidecar may touch, and so what its pod is granted: the command,
 * the store, the lease (or group) and its counts, and whether it writes pod labels. Each is
 * compared as written in the container's args; nothing else is, since an operator upgrade
 * changes the image and may change the other args of the pods the policy injected before, and
 * their grants must outlive it (as a mark outlives it in webhook mode).
 */
const GRANT_FLAGS = new Set(['backend', 'lease', 'shards', 'max-members', 'pod-label']);
const BOOLEAN_FLAGS = new Set(['pod-label']);

/**
 * The grant flags of an args list, each as `--flag=value` (`--flag` for a boolean given bare), in
 * order, after the command. Every spelling the sidecar's parser reads is caught: `--lease=x`, and
 * `--lease x` as two args; so a second --lease hidden in another spelling is seen, not skipped.
 */
export function grantArgs(args: readonly unknown[]): string[] {
  const out = [String(args[0])];
  for (let i = 1; i < args.length; i++) {
    const a = String(args[i]);
    const m = /^--([a-z-]+)(=.*)?$/s.exec(a);
    if (!m || !GRANT_FLAGS.has(m[1]!)) continue;
    if (m[2] !== undefined || BOOLEAN_FLAGS.has(m[1]!)) out.push(a);
    else out.push(`${a}=${String(args[++i])}`);
  }
  return out;
}

/**
 * The sidecar's environment as far as it can set a flag: every LEASEHOLD_ variable with what it
 * holds (a value, or the downward-API field). A variable is read when its flag is not given, so
 * one the policy does not set (LEASEHOLD_SHARDS, say) could change what the sidecar does; and
 * envFrom could bring any of them, so it is refused outright by the caller.
 */
function leaseholdEnv(c: Record<string, unknown>): string[] {
  const env = Array.isArray(c.env) ? (c.env as { name?: unknown; value?: unknown; valueFrom?: { fieldRef?: { fieldPath?: unknown } } }[]) : [];
  const held = (e: (typeof env)[number]) => {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    if (typeof path === 'string') return `fieldRef:${path}`;
    return typeof e.value === 'string' ? `value:${e.value}` : `valueFrom:${JSON.stringify(e.valueFrom ?? null)}`;
  };
  return env.filter((e) => typeof e.name === 'string' && e.name.startsWith('LEASEHOLD_')).map((e) => `${e.name as string}=${held(e)}`);
}

/**
 * The pod as admission saw it before the policy injected it: without the sidecar, the status
 * volume and the app containers' status mounts, and without its fence ask. When its name was made from generateName (after
 * admission, by the API server), without that name either, since the lease derived from the
 * workload was derived without it; `keepName` for a pod that gave both.
 */
function asAdmitted(pod: Pod, keepName: boolean): Pod {
  const spec = pod.spec ?? {};
  const strip = (cs: Container[] | undefined) =>
    cs
      ?.filter((c) => c.name !== SIDECAR_NAME)
      .map((c) => (c.volumeMounts ? { ...c, volumeMounts: c.volumeMounts.filter((m) => m.name !== STATUS_VOLUME) } : c));
  const meta = { ...pod.metadata };
  if (!keepName && meta.generateName) delete meta.name;
  // The fence ask changes nothing in the sidecar, and fence-bindings.ts judges it on its own
  // (LeaseholdNotFenced), as in webhook mode: a bad or edited value must not cost the pod its grant.
  if (meta.annotations?.[ANNOTATION.fenceObjects] !== undefined) {
    const { [ANNOTATION.fenceObjects]: _fence, ...rest } = meta.annotations;
    meta.annotations = rest;
  }
  return {
    metadata: meta,
    spec: {
      ...spec,
      containers: strip(spec.containers),
      ...(spec.initContainers ? { initContainers: strip(spec.initContainers) } : {}),
      ...(spec.volumes ? { volumes: spec.volumes.filter((v) => v.name !== STATUS_VOLUME) } : {}),
    },
  };
}

/**
 * Policy mode's rule for a labelled pod in a namespace the rules admit that has a sidecar: it is
 * granted what its own annotations give (injectionSettings, as the policy read them at CREATE)
 * only when its sidecar container is the one the policy injects for them: the same grant flags
 * (GRANT_FLAGS) and the same LEASEHOLD_ environment, and no envFrom. A pod's containers cannot
 * change after CREATE, so annotations edited later (to claim another lease, pod labels, a group's
 * counts) no longer match its container and earn nothing. Mounts are not compared: the
 * ServiceAccount admission plugin adds its token mount after the policy, and a mount widens
 * nothing the pod's ServiceAccount holds.
 */
export function policyClaim(pod: Pod, d: SidecarDefaults): PolicyClaim {
  const spec = pod.spec ?? {};
  const found = [...(spec.containers ?? []), ...(spec.initContainers ?? [])].find((c) => c.name === SIDECAR_NAME);
  if (!found) return { reason: `it has no container named ${SIDECAR_NAME}` };
  const notOurs = "it was not injected by this install's policy";
  if (found.envFrom !== undefined)
    return { reason: `its ${SIDECAR_NAME} container has envFrom, which the policy never injects (it could set any LEASEHOLD_ variable): ${notOurs}` };
  const have = { args: grantArgs(Array.isArray(found.args) ? found.args : []), env: leaseholdEnv(found) };
  let why = '';
  // The name made from generateName first (the usual case); then the name as given.
  for (const keepName of pod.metadata?.generateName && pod.metadata.name ? [false, true] : [true]) {
    let settings;
    try {
      settings = injectionSettings(asAdmitted(pod, keepName), d);
    } catch (err) {
      why = `its annotations could not have been injected (${describeError(err)}), so the policy did not make its ${SIDECAR_NAME} container`;
      continue;
    }
    const want = sidecarContainer(settings, d);
    const wantArgs = grantArgs(want.args as unknown[]);
    const wantEnv = leaseholdEnv(want);
    if (JSON.stringify(have.args) !== JSON.stringify(wantArgs)) {
      why = `its ${SIDECAR_NAME} container runs ${have.args.join(' ')}, but the policy injects ${wantArgs.join(' ')} for its annotations`;
      continue;
    }
    if (JSON.stringify(have.env) !== JSON.stringify(wantEnv)) {
      why = `its ${SIDECAR_NAME} container's LEASEHOLD_ environment is ${have.env.join(', ') || 'empty'}, but the policy injects ${wantEnv.join(', ')}`;
      continue;
    }
    const fields: MarkFields = {
      namespace: pod.metadata?.namespace ?? '',
      serviceAccount: serviceAccountOf(pod),
      lease: settings.lease,
      podLabel: settings.podLabel,
      ...(settings.group ? { group: settings.group } : {}),
    };
    return { fields };
  }
  return { reason: `${why}: ${notOurs}` };
}
