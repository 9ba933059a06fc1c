/**
 * What the Kubernetes store does with the shard groups' records beyond the contract
 * (group-store.contract.test.ts), on a real API server: the Leases as kubectl shows them, a
 * Lease of someone else's with a record's name never overwritten, fields it does not own
 * carried, and RBAC's refusal of the LIST named.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { admin, env, freshNamespace, kubectl, rawLease, storeFor } from '../support/kube.js';
import { contractHeader, contractShard, contractSlot } from '../../src/testing/group-store-contract.js';

interface RawLease {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; resourceVersion: string };
  spec: Record<string, unknown>;
}

describe('Kubernetes as a group store, on a real API server', () => {
  it('each record is a Lease named and labelled as docs/kubernetes.md says, so kubectl -l leasehold.io/group=G shows the group', async () => {
    const ns = await freshNamespace('groups');
    const store = storeFor(ns);
    try {
      await store.createGroupRecord('orders', contractHeader({ shards: 8 }));
      await store.createGroupRecord('orders', contractSlot(3, { holderIdentity: 'pod-a', session: 5, state: 'leaving' }));
      await store.createGroupRecord('orders', contractShard(7, { holderIdentity: 'pod-a', owner: { slot: 3, session: 5 }, token: 9 }));
      await store.createGroupRecord('orders', contractShard(6, { holderIdentity: '', owner: null, token: 2, acquireTime: null }));
      await store.createGroupRecord('orders-v2', contractSlot(0));
      const listed = JSON.parse(kubectl(['get', 'leases', '-n', ns, '-l', 'leasehold.io/group=orders', '-o', 'json'])) as { items: RawLease[] };
      const byName = new Map(listed.items.map((l) => [l.metadata.name, l]));
      assert.deepEqual([...byName.keys()].sort(), ['orders', 'orders-member-0003', 'orders-shard-0006', 'orders-shard-0007']);
      const kinds = Object.fromEntries([...byName].map(([n, l]) => [n, l.metadata.labels]));
      assert.deepEqual(kinds, {
        orders: { 'leasehold.io/group': 'orders', 'leasehold.io/group-record': 'group' },
        'orders-member-0003': { 'leasehold.io/group': 'orders', 'leasehold.io/group-record': 'member' },
        'orders-shard-0006': { 'leasehold.io/group': 'orders', 'leasehold.io/group-record': 'shard' },
        'orders-shard-0007': { 'leasehold.io/group': 'orders', 'leasehold.io/group-record': 'shard' },
      });
      assert.deepEqual(byName.get('orders')!.metadata.annotations, { 'leasehold.io/shards': '8' });
      assert.equal(byName.get('orders')!.spec.acquireTime, '2026-12-02T09:15:24.123000Z');
      const slot = byName.get('orders-member-0003')!;
      assert.deepEqual(slot.metadata.annotations, { 'leasehold.io/member-state': 'leaving' });
      assert.deepEqual(slot.spec, { holderIdentity: 'pod-a', leaseTransitions: 5, renewTime: '2026-12-02T09:15:24.123000Z', leaseDurationSeconds: 15 });
      const shard = byName.get('orders-shard-0007')!;
      assert.deepEqual(shard.metadata.annotations, { 'leasehold.io/owner-session': '3/5' });
      assert.deepEqual(shard.spec, { holderIdentity: 'pod-a', leaseTransitions: 9, acquireTime: '2026-12-02T09:15:24.123000Z' });
      const free = byName.get('orders-shard-0006')!;
      assert.equal(free.metadata.annotations?.['leasehold.io/owner-session'], undefined);
      assert.deepEqual(free.spec, { holderIdentity: '', leaseTransitions: 2 });
    } finally {
      await store.close();
    }
  });

  it("a Lease with a record's name but not the group's labels is someone else's: never overwritten, one coded error; not listed", async () => {
    const ns = await freshNamespace('groups');
    const store = storeFor(ns);
    try {
      // Someone else's leader-election Lease, named as group jobs's shard 1 would be.
      const at = new Date();
      await store.create('jobs-shard-0001', { holderIdentity: 'someone', leaseDurationSeconds: 15, acquireTime: at, renewTime: at, leaseTransitions: 4 });
      kubectl(['label', 'lease', 'jobs-shard-0001', '-n', ns, 'team=payments']);
      const before = rawLease(ns, 'jobs-shard-0001');
      await assert.rejects(
        store.createGroupRecord('jobs', contractShard(1)),
        (e: { code: string; message: string }) =>
          e.code === 'LEASEHOLD_ERR_FOREIGN_RECORD' &&
          /is not group jobs's record shard\/1: it has leasehold.io\/group=\(none\)/.test(e.message) &&
          /never overwritten/.test(e.message),
      );
      await assert.rejects(store.updateGroupRecord('jobs', contractShard(1), String(before.metadata.resourceVersion)), {
        code: 'LEASEHOLD_ERR_FOREIGN_RECORD',
      });
      // Labelled for another group: still not this group's.
      kubectl(['label', 'lease', 'jobs-shard-0001', '-n', ns, 'leasehold.io/group=other', 'leasehold.io/group-record=shard']);
      const relabelled = rawLease(ns, 'jobs-shard-0001');
      await assert.rejects(store.updateGroupRecord('jobs', contractShard(1), String(relabelled.metadata.resourceVersion)), {
        code: 'LEASEHOLD_ERR_FOREIGN_RECORD',
      });
      assert.deepEqual(rawLease(ns, 'jobs-shard-0001').spec, relabelled.spec, 'the Lease is as it was');
      assert.deepEqual(await store.listGroup('jobs'), []);
      // A Lease labelled for the group whose name is none of its records' is not listed either.
      await store.create('jobs-extra', { holderIdentity: 'x', leaseDurationSeconds: 15, acquireTime: at, renewTime: at, leaseTransitions: 1 });
      kubectl(['label', 'lease', 'jobs-extra', '-n', ns, 'leasehold.io/group=jobs', 'leasehold.io/group-record=shard']);
      assert.deepEqual(await store.listGroup('jobs'), []);
    } finally {
      await store.close();
    }
  });

  it('labels and annotations of its own that someone added are carried over a write; ours follow the record', async () => {
    const ns = await freshNamespace('groups');
    const store = storeFor(ns);
    try {
      const v1 = await store.createGroupRecord('carry', contractShard(0));
      kubectl(['annotate', 'lease', 'carry-shard-0000', '-n', ns, 'example.com/note=kept']);
      kubectl(['label', 'lease', 'carry-shard-0000', '-n', ns, 'team=payments']);
      const [seen] = await store.listGroup('carry');
      assert.notEqual(seen!.version, v1);
      await store.updateGroupRecord('carry', contractShard(0, { holderIdentity: '', owner: null, token: 1, acquireTime: null }), seen!.version);
      const after = rawLease(ns, 'carry-shard-0000') as unknown as RawLease;
      assert.deepEqual(after.metadata.annotations, { 'example.com/note': 'kept' });
      assert.equal(after.metadata.labels?.team, 'payments');
      assert.equal(after.metadata.labels?.['leasehold.io/group'], 'carry');
    } finally {
      await store.close();
    }
  });

  it('a group name longer than a label value may be is refused before any request, naming the rule', async () => {
    const ns = await freshNamespace('groups');
    const store = storeFor(ns);
    try {
      const long = 'g'.repeat(64);
      await assert.rejects(
        store.createGroupRecord(long, contractSlot(0)),
        (e: { code: string; field?: string; message: string }) =>
          e.code === 'LEASEHOLD_ERR_INVALID_CONFIG' && e.field === 'group' && /at most 63 characters/.test(e.message),
      );
      assert.equal(kubectl(['get', 'leases', '-n', ns, '-o', 'name']).trim(), '');
    } finally {
      await store.close();
    }
  });

  it('a user RBAC lets list no Leases: one coded error naming the verb', async () => {
    const ns = await freshNamespace('groups');
    await admin.rbac().createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'get-only' }, rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'] }] },
    });
    await admin.rbac().createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'get-only' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'get-only' },
        subjects: [{ kind: 'User', name: env().restrictedUser, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    const store = storeFor(ns, env().restricted);
    try {
      await assert.rejects(
        store.listGroup('g'),
        (e: { code: string; message: string }) => e.code === 'LEASEHOLD_ERR_FORBIDDEN' && /RBAC denies verb "list"/.test(e.message),
      );
    } finally {
      await store.close();
    }
  });
});
