import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KubernetesLeaseStore } from './store.js';
import { InvalidConfigError, InvalidRecordError } from '../../errors.js';
import type { KubeClient } from '../../kube/api-client.js';
import type { LeaseRecord } from '../lease-store.js';

// The store's own refusals, made before any request: a client that counts what it is asked.
// What it writes on the wire is covered against a real API server (test/kubernetes/).
function counted(): { client: KubeClient; requests: string[] } {
  const requests: string[] = [];
  const client = {
    conn: { server: 'https://apiserver.invalid' },
    request: (method: string, path: string) => {
      requests.push(`${method} ${path}`);
      return Promise.reject(new Error('no request was expected'));
    },
  } as unknown as KubeClient;
  return { client, requests };
}

const record: LeaseRecord = {
  holderIdentity: 'a',
  leaseDurationSeconds: 1.5,
  acquireTime: new Date('2026-12-02T09:00:00.000Z'),
  renewTime: new Date('2026-12-02T09:00:00.000Z'),
  leaseTransitions: 1,
};

describe('KubernetesLeaseStore: a duration a Lease cannot hold', () => {
  it('refuses a leaseDurationSeconds that is not whole, instead of rounding it', async () => {
    const { client, requests } = counted();
    const store = new KubernetesLeaseStore(client, 'default');
    for (const write of [() => store.create('x', record), () => store.update('x', record, '1')]) {
      await assert.rejects(write, (err: unknown) => err instanceof InvalidConfigError && err.field === 'leaseDuration' && /whole seconds/.test(err.message));
    }
    assert.deepEqual(
      requests.filter((r) => r.startsWith('POST') || r.startsWith('PUT')),
      [],
      'nothing written',
    );
  });
});

describe('KubernetesLeaseStore: a successor claim that would not read back', () => {
  it('refuses it with an invalid-record error before any request, instead of writing an annotation read as no claim', async () => {
    const { client, requests } = counted();
    const store = new KubernetesLeaseStore(client, 'default');
    const whole = { ...record, leaseDurationSeconds: 15 };
    const bad = [
      { identity: '', claimedAt: new Date('2026-12-02T09:00:00.000Z') },
      { identity: 'b\nc', claimedAt: new Date('2026-12-02T09:00:00.000Z') },
      { identity: 'x'.repeat(254), claimedAt: new Date('2026-12-02T09:00:00.000Z') },
      { identity: 'b', claimedAt: new Date(NaN) },
    ];
    for (const successor of bad) {
      for (const write of [() => store.create('x', { ...whole, successor }), () => store.update('x', { ...whole, successor }, '1')]) {
        await assert.rejects(write, (err: unknown) => err instanceof InvalidRecordError && /^successor claim: /.test(err.message));
      }
    }
    assert.deepEqual(requests, [], 'nothing sent');
  });
});
