import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KubeClient } from '../../kube/api-client.js';
import { KubernetesGroupStore } from './group-store.js';

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
