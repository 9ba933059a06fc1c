/**
 * The group's reads by change on a real API server (issue 43 item 2): the first read LISTs the
 * group's Leases, and after it, while the watch lasts, no read is a LIST however often the
 * others heartbeat; each heartbeat and a deletion by kubectl show in the reads. Requests are
 * counted at the client, as the store sends them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect } from '../../src/kube/connect.js';
import { KubernetesLeaseStore } from '../../src/backends/kubernetes/store.js';
import { leaseNameOf } from '../../src/backends/kubernetes/group-names.js';
import type { VersionedGroupRecord } from '../../src/backends/group-store.js';
import { contractHeader, contractShard, contractSlot } from '../../src/testing/group-store-contract.js';
import { until } from '../../src/testing/contract-helpers.js';
import { env, freshNamespace, kubectl, storeFor } from '../support/kube.js';

describe('Kubernetes group store: reads by change from the watch', () => {
  let ns: string;
  let store: KubernetesLeaseStore;
  let peer: KubernetesLeaseStore;
  const sent: string[] = [];

  before(async () => {
    ns = await freshNamespace('group-watch');
    const { client } = connect({ kubeconfig: env().admin, namespace: ns });
    // Every request and watch the store sends, counted where it leaves.
    const request = client.request.bind(client);
    const watch = client.watch.bind(client);
    client.request = (method: string, path: string, opts?: Parameters<typeof request>[2]) => {
      sent.push(`${method} ${path.replace(/\?.*/, '')}${path.includes('labelSelector') ? ' (LIST)' : ''}`);
      return request(method, path, opts);
    };
    client.watch = (path: string, query: Record<string, string>, onEvent, onEnd) => {
      sent.push(`WATCH ${query.resourceVersion}`);
      return watch(path, query, onEvent, onEnd);
    };
    store = new KubernetesLeaseStore(client, ns);
    peer = storeFor(ns);
  });

  after(async () => {
    await store?.close();
    await peer?.close();
  });

  it('an idle group costs no LIST while the watch lasts: each heartbeat and a deletion arrive as events', async () => {
    const g = 'idle';
    await peer.createGroupRecord(g, contractHeader());
    let slot = await peer.createGroupRecord(g, contractSlot(1, { holderIdentity: 'peer' }));
    for (let s = 0; s < 8; s++) await peer.createGroupRecord(g, contractShard(s, { holderIdentity: 'peer', owner: { slot: 1, session: 1 } }));
    const view = new Map<string, VersionedGroupRecord>();
    const apply = (c: Awaited<ReturnType<NonNullable<KubernetesLeaseStore['readGroupChanges']>>>) => {
      if (c.full) view.clear();
      for (const r of c.records) view.set(`${r.record.kind}/${r.record.index}`, r);
      return c.cursor;
    };
    let cursor = apply(await store.readGroupChanges(g, undefined));
    assert.equal(view.size, 10);
    let hints = 0;
    const unwatch = store.watchGroup(g, () => void hints++);
    try {
      // The peer heartbeats 20 times; this store reads after each until it shows it.
      for (let beat = 1; beat <= 20; beat++) {
        const renewTime = new Date(Date.UTC(2026, 11, 6, 12, 0, beat));
        slot = await peer.updateGroupRecord(g, contractSlot(1, { holderIdentity: 'peer', renewTime }), slot);
        await until(`heartbeat ${beat} in the reads`, async () => {
          cursor = apply(await store.readGroupChanges(g, cursor));
          return view.get('member/1')?.version === slot ? true : undefined;
        });
      }
      assert.ok(hints >= 1, 'the watch gave no hint');
      kubectl(['delete', 'lease', leaseNameOf(g, { kind: 'shard', index: 3 }), '-n', ns]);
      await until('the deletion in the reads', async () => {
        cursor = apply(await store.readGroupChanges(g, cursor));
        return view.has('shard/3') ? undefined : true;
      });
      assert.equal(view.size, 9);
    } finally {
      unwatch();
    }
    const lists = sent.filter((s) => s.endsWith('(LIST)'));
    assert.deepEqual(lists, [`GET /apis/coordination.k8s.io/v1/namespaces/${ns}/leases (LIST)`], `a LIST beyond the first: ${sent.join(', ')}`);
    assert.equal(sent.filter((s) => s.startsWith('WATCH')).length, 1, `the watch was opened more than once: ${sent.join(', ')}`);
  });

  it("a read shows this store's own write at once (it waits for the watch to bring it)", async () => {
    const g = 'own';
    await store.readGroupChanges(g, undefined);
    const before = await store.readGroupChanges(g, undefined);
    const version = await store.createGroupRecord(g, contractSlot(0));
    const next = await store.readGroupChanges(g, before.cursor);
    assert.deepEqual(
      next.records.map((r) => [r.record.kind, r.record.index, r.version]),
      [['member', 0, version]],
    );
  });
});
