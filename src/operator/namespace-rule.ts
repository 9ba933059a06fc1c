import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient } from '../kube/api-client.js';
import { ALLOWED_LEASES, NAMESPACE_OPT_IN } from './annotations.js';

interface Namespace {
  metadata?: { name?: string; annotations?: Record<string, string> };
}

/** Which namespaces the webhook sees, and which foreign Leases each namespace's owner allows. Read once per pass. */
export interface NamespaceRule {
  /** True when the webhook is called for pods of `ns`: not excluded and, with opt-in, labelled. */
  inScope(ns: string): boolean;
  /** The names in the namespace's leasehold.io/allowed-leases annotation. */
  allowedLeases(ns: string): Promise<string[]>;
}

/**
 * The namespace rules of the webhook configuration (the chart's namespaceSelector: never the
 * excluded ones, and with opt-in only those labelled leasehold.io/injection=enabled), applied
 * again by the reconciler: a mark obtained by calling the webhook directly, for a namespace the
 * API server would not have sent, must not earn a grant there either.
 */
export async function namespaceRule(client: KubeClient, o: { excluded: string[]; optIn: boolean }): Promise<NamespaceRule> {
  let optedIn: Set<string> | undefined;
  if (o.optIn) {
    const selector = encodeURIComponent(`${NAMESPACE_OPT_IN.key}=${NAMESPACE_OPT_IN.value}`);
    const list = await client.request<{ items: Namespace[] }>('GET', `/api/v1/namespaces?labelSelector=${selector}`);
    optedIn = new Set(list.items.map((n) => n.metadata?.name ?? ''));
  }
  const allowed = new Map<string, Promise<string[]>>();
  return {
    inScope: (ns) => !o.excluded.includes(ns) && (optedIn === undefined || optedIn.has(ns)),
    allowedLeases(ns) {
      let names = allowed.get(ns);
      if (!names) {
        names = client.request<Namespace>('GET', `/api/v1/namespaces/${encodeURIComponent(ns)}`).then(
          (n) =>
            (n.metadata?.annotations?.[ALLOWED_LEASES] ?? '')
              .split(',')
              .map((s) => s.trim())
              .filter((s) => s !== ''),
          // A namespace gone meanwhile allows nothing; any other failure fails the pass.
          (err: unknown) => {
            if (httpStatus(err) === 404) return [];
            throw err;
          },
        );
        allowed.set(ns, names);
      }
      return names;
    },
  };
}
