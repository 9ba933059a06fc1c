/**
 * What the operator's checks in their own files (operator-key-checks.ts,
 * operator-install-checks.ts) use of the session and the release operator-checks.ts installs,
 * and the views of it they share: an install's grants by uid, and a leader's renewals.
 */
import assert from 'node:assert/strict';
import { waitFor } from '../support/cli.js';
import type { LeaseView } from '../support/cluster-views.js';

/** What the checks in other files (operator-key-checks.ts, operator-install-checks.ts) use of this session and release. */
export interface OperatorCheckContext {
  kubectl: (...args: string[]) => string;
  helm: (...args: string[]) => string;
  /** helm that does not throw: its exit status and stderr, for an install that must be refused. */
  tryHelm: (...args: string[]) => { status: number; stderr: string };
  /** kubectl in the operator's namespace. */
  op: (...args: string[]) => string;
  /** kubectl that does not throw. */
  run: (args: string[], input?: string) => { status: number | null; stdout: string; stderr: string };
  create: (manifest: object) => { ok: boolean; out: string };
  apply: (manifest: object) => void;
  /** Waits until every view of the injected Deployment agrees on one leader. */
  agreed: (timeoutMs: number) => Promise<{ leader: string; token: number }>;
  leaseOf: (name: string) => LeaseView;
  chart: string;
  release: string;
  operatorNamespace: string;
  /** The release's install name, on every Role and RoleBinding it makes. */
  installation: string;
  /** The injected Deployment, and its lease. */
  app: string;
  appCommand: string[];
  testLabel: string;
}

interface Named {
  metadata: { name: string; uid: string };
}

/** The Roles and RoleBindings of the release's install in `ns`, by kind and name, with their uids. */
export function grantUids(ctx: OperatorCheckContext, installation: string): Record<string, string> {
  return Object.fromEntries(
    ['roles', 'rolebindings'].flatMap((kind) =>
      (JSON.parse(ctx.kubectl('get', kind, '-l', `leasehold.io/installation=${installation}`, '-o', 'json')) as { items: Named[] }).items.map((o) => [
        `${kind}/${o.metadata.name}`,
        o.metadata.uid,
      ]),
    ),
  );
}

/** Waits for `count` renewals of the Lease after now, each by `holder` in the same term. */
export async function renewals(ctx: OperatorCheckContext, lease: string, holder: string, count: number): Promise<number> {
  const term = ctx.leaseOf(lease);
  assert.equal(term.holderIdentity, holder);
  const seen = new Set<string>([term.renewTime ?? '']);
  const t0 = Date.now();
  await waitFor(
    `${count} renewals of ${lease} by ${holder}`,
    () => {
      const now = ctx.leaseOf(lease);
      assert.equal(now.holderIdentity, holder, `the leader of ${lease} changed`);
      assert.equal(now.leaseTransitions, term.leaseTransitions, `a new term of ${lease}`);
      seen.add(now.renewTime ?? '');
      return seen.size > count;
    },
    60_000,
    500,
  );
  return Date.now() - t0;
}
