/**
 * Comparing pods as the API server stored them, to show that an admission webhook changed
 * nothing: two pods of one ReplicaSet, one created before the webhook existed and one after, are
 * the same object but for what makes each pod itself. Pure, unit-tested in admitted-pod.test.ts.
 */

/** Set by the API server for each object: never the same for two pods. */
const IDENTITY = ['name', 'uid', 'resourceVersion', 'creationTimestamp', 'managedFields'];

/**
 * The service account admission plugin's token volume: `kube-api-access-` and 5 random
 * characters, chosen per pod. Only that suffix is blanked, wherever the name appears.
 */
const TOKEN_VOLUME = /"kube-api-access-[a-z0-9]{5}"/g;

/**
 * A pod without its identity and its status: everything else it holds (labels, annotations,
 * owner, the whole spec, the node it was bound to), with the token volume's random suffix
 * blanked. Two pods of one template admitted alike give equal results.
 */
export function comparablePod(pod: unknown): unknown {
  const p = JSON.parse(JSON.stringify(pod)) as { metadata?: Record<string, unknown>; status?: unknown };
  for (const k of IDENTITY) delete p.metadata?.[k];
  delete p.status;
  return JSON.parse(JSON.stringify(p).replace(TOKEN_VOLUME, '"kube-api-access-*"'));
}

/**
 * Where `actual` does not hold what was `sent`: each path whose sent value is missing or
 * different. Objects may hold more keys than were sent (the API server's defaults); an array
 * must hold exactly as many elements as were sent, each holding its sent counterpart.
 */
export function notKept(sent: unknown, actual: unknown, path = ''): string[] {
  if (Array.isArray(sent)) {
    if (!Array.isArray(actual) || actual.length !== sent.length) return [`${path}: sent ${sent.length} elements, got ${JSON.stringify(actual)}`];
    return sent.flatMap((s, i) => notKept(s, actual[i], `${path}[${i}]`));
  }
  if (sent !== null && typeof sent === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${path}: sent an object, got ${JSON.stringify(actual)}`];
    const a = actual as Record<string, unknown>;
    return Object.entries(sent).flatMap(([k, v]) => notKept(v, a[k], `${path}.${k}`));
  }
  return sent === actual ? [] : [`${path}: sent ${JSON.stringify(sent)}, got ${JSON.stringify(actual)}`];
}
