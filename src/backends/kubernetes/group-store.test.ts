import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KubeClient } from '../../kube/api-client.js';
import { HIGH_WATER_ANNOTATION, KubernetesGroupStore, LONGEST_LEASE_ANNOTATION, SHARDS_ANNOTATION } from './group-store.js';
import { labelsOf } from './group-names.js';
import { isLeaseholdError } from '../../errors.js';

it('a group watch stopped while its first list is out opens no watch (the client may be closed by then)', async () => {
  let answerList!: () => void;
  let watches = 0;
  const client = {
    request: () => new Promise((resolve) => (answerList = () => resolve({ metadata: { resourceVersion: '5' }, items: [] }))),
    watch: () => {
      watches++;
      return Promise.resolve({ abort: () => {} });
    },
  } as unknown as KubeClient;
  const health: boolean[] = [];
  let changes = 0;
  const stop = new KubernetesGroupStore(client, 'apps').watchGroup(
    'jobs',
    () => void changes++,
    (h) => void health.push(h),
  );
  stop();
  answerList();
  for (let i = 0; i < 5; i++) await Promise.resolve();
  assert.deepEqual({ watches, changes, health }, { watches: 0, changes: 0, health: [] });
});

it("the header's longest lease annotation: absent reads as none (a header from before it), a number of seconds reads back, anything else is an InvalidRecordError", async () => {
  const header = (annotations: Record<string, string>) => ({
    metadata: { name: 'jobs', resourceVersion: '7', labels: labelsOf('jobs', { kind: 'group' }), annotations: { [SHARDS_ANNOTATION]: '4', ...annotations } },
    spec: { acquireTime: '2026-12-02T09:15:24.123000Z' },
  });
  const listing = (annotations: Record<string, string>) =>
    new KubernetesGroupStore(
      { request: () => Promise.resolve({ metadata: { resourceVersion: '7' }, items: [header(annotations)] }) } as unknown as KubeClient,
      'apps',
    );
  const [old] = await listing({ [HIGH_WATER_ANNOTATION]: '12' }).listGroup('jobs');
  assert.deepEqual(old?.record, { kind: 'group', index: 0, shards: 4, createdAt: new Date('2026-12-02T09:15:24.123Z'), highWater: 12 });
  const [raised] = await listing({ [HIGH_WATER_ANNOTATION]: '12', [LONGEST_LEASE_ANNOTATION]: '30' }).listGroup('jobs');
  assert.equal(raised?.record.kind === 'group' && raised.record.longestLeaseSeconds, 30);
  for (const bad of ['0', '-30', 'thirty', '1e3', ''])
    await assert.rejects(
      listing({ [LONGEST_LEASE_ANNOTATION]: bad }).listGroup('jobs'),
      (err: Error) => isLeaseholdError(err) && err.code === 'LEASEHOLD_ERR_INVALID_RECORD',
      bad,
    );
});
