import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { admin, env, freshNamespace, kubectl, rawLease, storeFor, storeFromConfig } from '../support/kube.js';
import { leaseRecord, RECORD_TIME as at } from '../support/lease-record.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';

const rec = leaseRecord;

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as { code: string }).code;
  }
}

describe('the kubernetes store on a real kube-apiserver', () => {
  let ns = '';
  before(async () => {
    ns = await freshNamespace('store');
  });

  it('absent → null; create; create again → conflict (409)', async () => {
    const s = storeFor(ns);
    assert.equal(await s.get('l1'), null);
    const v = await s.create('l1', rec());
    assert.match(v, /^\d+$/);
    assert.equal(await code(s.create('l1', rec())), 'LEASEHOLD_ERR_CONFLICT');
  });

  it('writes MicroTime with exactly six fractional digits and the Lease spec fields', async () => {
    const s = storeFor(ns);
    await s.create('l2', rec());
    const raw = rawLease(ns, 'l2');
    assert.deepEqual(raw.spec, {
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-12-02T09:15:24.123000Z',
      renewTime: '2026-12-02T09:15:24.123000Z',
      leaseTransitions: 1,
    });
    const got = await s.get('l2');
    assert.equal(got?.record.renewTime?.toISOString(), at.toISOString());
    assert.equal(got?.version, raw.metadata.resourceVersion);
  });

  it('another writer between our read and our write: update fails with a conflict, nothing overwritten', async () => {
    const s = storeFor(ns);
    await s.create('l3', rec());
    const read = (await s.get('l3'))!;
    kubectl(['annotate', 'lease', 'l3', '-n', ns, 'someone=else']);
    assert.equal(await code(s.update('l3', rec({ holderIdentity: 'b' }), read.version)), 'LEASEHOLD_ERR_CONFLICT');
    assert.equal(rawLease(ns, 'l3').spec.holderIdentity, 'a');
    // Re-read and retry: succeeds, and keeps the other writer's annotation (as client-go does).
    const again = (await s.get('l3'))!;
    await s.update('l3', rec({ holderIdentity: 'b' }), again.version);
    const raw = rawLease(ns, 'l3');
    assert.equal(raw.spec.holderIdentity, 'b');
    assert.equal((raw.metadata.annotations as Record<string, string>).someone, 'else');
  });

  it('update of a deleted Lease is a conflict and recreates nothing (the API server answers 409 for a stale resourceVersion)', async () => {
    const s = storeFor(ns);
    await s.create('l4', rec());
    const read = (await s.get('l4'))!;
    kubectl(['delete', 'lease', 'l4', '-n', ns]);
    assert.equal(await code(s.update('l4', rec(), read.version)), 'LEASEHOLD_ERR_CONFLICT');
    assert.equal(await s.get('l4'), null);
    // Leases allow create-on-update; the store's uid precondition must still refuse it, even
    // when its cached object is gone (as after a watch's DELETED event).
    const fresh = storeFor(ns);
    await fresh.create('l4', rec());
    const again = (await fresh.get('l4'))!;
    kubectl(['delete', 'lease', 'l4', '-n', ns]);
    await fresh.get('l4'); // reads "absent", dropping the cached object
    assert.equal(await code(fresh.update('l4', rec(), again.version)), 'LEASEHOLD_ERR_CONFLICT');
    assert.equal(await fresh.get('l4'), null, 'an update never recreates a deleted Lease');
  });

  it('a release is written as client-go writes it', async () => {
    const s = storeFor(ns);
    const v = await s.create('l5', rec({ leaseTransitions: 6 }));
    const now = new Date('2026-12-02T10:00:00.500Z');
    await s.update('l5', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: 6 }, v);
    assert.deepEqual(rawLease(ns, 'l5').spec, {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: '2026-12-02T10:00:00.500000Z',
      renewTime: '2026-12-02T10:00:00.500000Z',
      leaseTransitions: 6,
    });
  });

  it('RBAC denial (403) names the verb and the resource; nothing is written', async () => {
    const s = storeFor(ns, env().restricted);
    await assert.rejects(s.get('l1'), (err: Error & { code: string }) => {
      assert.equal(err.code, 'LEASEHOLD_ERR_FORBIDDEN');
      assert.match(err.message, /RBAC denies verb "get" on resource "leases"/);
      assert.match(err.message, /cannot get resource "leases" in API group "coordination.k8s.io"/);
      return true;
    });
    assert.equal(await code(s.create('denied', rec())), 'LEASEHOLD_ERR_FORBIDDEN');
    assert.equal(
      (await admin.coordination().listNamespacedLease({ namespace: ns })).items.some((l) => l.metadata?.name === 'denied'),
      false,
    );
  });

  it('a bad token is unauthorized (401); an unreachable server is unavailable', async () => {
    const badConfig = join(env().cpDir, 'bad-token.kubeconfig');
    writeFileSync(badConfig, readFileSync(env().admin, 'utf8').replace(/token: .*/, 'token: not-a-real-token'));
    assert.equal(await code(storeFor(ns, badConfig).get('l1')), 'LEASEHOLD_ERR_UNAUTHORIZED');
    const deadConfig = join(env().cpDir, 'dead.kubeconfig');
    writeFileSync(deadConfig, readFileSync(env().admin, 'utf8').replace(/server: .*/, 'server: https://127.0.0.1:1'));
    assert.equal(await code(storeFor(ns, deadConfig).get('l1')), 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE');
  });

  it('an invalid record is rejected (422) with the API server message', async () => {
    const s = storeFor(ns);
    await assert.rejects(s.create('l6', rec({ leaseDurationSeconds: -5 })), (err: Error & { code: string }) => {
      assert.equal(err.code, 'LEASEHOLD_ERR_INVALID_RECORD');
      assert.match(err.message, /leaseDurationSeconds/);
      return true;
    });
  });

  it('namespace: from the flag, else the kubeconfig context, else default', () => {
    assert.equal(storeFromConfig({ kubeconfig: env().admin, namespace: 'x' }).namespace, 'x');
    assert.equal(storeFromConfig({ kubeconfig: env().admin }).namespace, 'default');
  });
});
