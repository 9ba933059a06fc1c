import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { admin, backendArgs, env, freshNamespace, kubectl, rawLease, storeFor } from '../support/kube.js';
import { readLeadership } from '../../src/status/status-reader.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };

describe('Kubernetes: RBAC without update, a deleted Lease, takeover after expiry', () => {
  const dir = scratchDir(() => cands);
  const cands: Candidate[] = [];

  it('a user whose RBAC lacks update gets one clear error and never believes it leads', { timeout: 60_000 }, async () => {
    const ns = await freshNamespace('rbac');
    // get/list/watch/create but no update: it can see the Lease, never take it.
    await admin.rbac().createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'no-update' },
        rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'create'] }],
      },
    });
    await admin.rbac().createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'no-update' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-update' },
        subjects: [{ kind: 'User', name: env().restrictedUser, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    // A released Lease: anyone with update could take it at once.
    const s = storeFor(ns);
    const t = new Date();
    await s.create('guarded', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: t, renewTime: t, leaseTransitions: 3 });
    const c = startSidecar(dir.path, 'restricted', backendArgs(ns, 'guarded', env().restricted), T);
    cands.push(c);
    await waitFor('the denial in the log', () => /RBAC denies verb \\"update\\" on resource \\"leases\\"/.test(c.proc.stderr()), 15_000);
    for (let i = 0; i < 20; i++) {
      assert.equal(leadersByStatus([c]).length, 0, 'must never say leader');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(rawLease(ns, 'guarded').spec.holderIdentity, '');
    assert.equal(rawLease(ns, 'guarded').spec.leaseTransitions, 3);
    assert.match(c.proc.stderr(), /"code":"LEASEHOLD_ERR_FORBIDDEN"|cannot update resource \\"leases\\"/);
    c.proc.kill('SIGTERM');
    assert.equal((await c.proc.exited).code, 0);
  });

  it('a Lease deleted under its leader: whoever recreates it continues the token, never reusing one', { timeout: 60_000 }, async () => {
    const ns = await freshNamespace('deleted');
    const a = startSidecar(dir.path, 'del-a', backendArgs(ns, 'doomed'), T);
    const b = startSidecar(dir.path, 'del-b', backendArgs(ns, 'doomed'), T);
    cands.push(a, b);
    const first = await waitFor('a leader', () => validLeaders([a, b])[0], 20_000);
    // Both candidates have seen the Lease (a candidate started after the deletion could not
    // know its token: see docs/kubernetes.md).
    await waitFor('both to have seen the holder', () => [a, b].every((c) => readLeadership(c.statusDir).status?.holder === first.c.id), 20_000);
    kubectl(['delete', 'lease', 'doomed', '-n', ns]);
    const next = await waitFor('a leader of a new term', () => validLeaders([a, b]).find((l) => l.token > first.token), 10_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${a.proc.stderr()}\n${b.proc.stderr()}`);
    });
    assert.equal(next.token, first.token + 1, 'the token continues from the highest one seen (or carried by the watch)');
    assert.equal(rawLease(ns, 'doomed').spec.leaseTransitions, next.token);
    assert.equal(validLeaders([a, b]).length, 1);
    if (next.c === first.c) assert.match(first.c.proc.stderr(), /stopped leading.*the lease record disappeared/);
  });

  it('takeover after expiry (SIGKILL) bumps leaseTransitions', { timeout: 60_000 }, async () => {
    const ns = await freshNamespace('expiry');
    const a = startSidecar(dir.path, 'exp-a', backendArgs(ns, 'expiry'), T);
    cands.push(a);
    const first = await waitFor('a leader', () => validLeaders([a])[0], 20_000);
    const b = startSidecar(dir.path, 'exp-b', backendArgs(ns, 'expiry'), T);
    cands.push(b);
    await new Promise((r) => setTimeout(r, 1_000));
    a.proc.kill('SIGKILL');
    const next = await waitFor('b to take over', () => validLeaders([b])[0], 15_000);
    assert.equal(next.token, first.token + 1);
    assert.equal(rawLease(ns, 'expiry').spec.leaseTransitions, first.token + 1);
    assert.equal(rawLease(ns, 'expiry').spec.holderIdentity, 'exp-b');
  });
});
