import { it } from 'node:test';
import assert from 'node:assert/strict';
import { comparablePod, notKept } from './admitted-pod.js';

/** A pod of a ReplicaSet as the API server stores it (trimmed), with its per-pod identity. */
const stored = (name: string, token: string) => ({
  metadata: {
    name,
    generateName: 'plain-5d8f7-',
    namespace: 'default',
    uid: `uid-${name}`,
    resourceVersion: name.length.toString(),
    creationTimestamp: `2026-12-03T10:00:0${name.length % 10}Z`,
    managedFields: [{ manager: 'kube-controller-manager', time: 'now' }],
    labels: { 'app.kubernetes.io/instance': 'plain', 'pod-template-hash': '5d8f7' },
    ownerReferences: [{ kind: 'ReplicaSet', name: 'plain-5d8f7', controller: true }],
  },
  spec: {
    containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: token, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }] }],
    volumes: [{ name: token, projected: { sources: [] } }],
    nodeName: 'lh-node',
  },
  status: { phase: 'Running', podIP: '10.0.0.1' },
});

it('comparablePod: two pods of one ReplicaSet compare equal despite their identity, status and token volume', () => {
  assert.deepEqual(comparablePod(stored('plain-5d8f7-abcde', 'kube-api-access-x7k2p')), comparablePod(stored('plain-5d8f7-zz9q1', 'kube-api-access-9mwq4')));
});

it('comparablePod: anything a webhook adds or changes makes them differ', () => {
  const ref = comparablePod(stored('a', 'kube-api-access-aaaaa'));
  const changed: ((p: ReturnType<typeof stored>) => void)[] = [
    (p) => Object.assign(p.metadata, { annotations: { 'leasehold.io/injected-lease': 'plain' } }),
    (p) => Object.assign(p.metadata.labels, { extra: 'x' }),
    (p) => Object.assign(p.spec.containers[0]!, { env: [{ name: 'X', value: '1' }] }),
    (p) => p.spec.volumes.push({ name: 'leasehold-status', projected: { sources: [] } }),
    (p) => p.spec.containers[0]!.volumeMounts.push({ name: 'leasehold-status', mountPath: '/leader' }),
    (p) => (p.spec.containers[0]!.image = 'busybox:other'),
    (p) => p.spec.containers.push({ name: 'leasehold', image: 'leasehold', volumeMounts: [] }),
    (p) => (p.spec.volumes[0]!.name = 'kube-api-access-toolong'),
  ];
  for (const [i, change] of changed.entries()) {
    const p = stored('b', 'kube-api-access-bbbbb');
    change(p);
    assert.notDeepEqual(comparablePod(p), ref, `change ${i} went unseen`);
  }
});

it('notKept: defaults added are fine; a value changed, an element added or removed is named by its path', () => {
  const sent = { containers: [{ name: 'app', command: ['sh', '-c', 'x'] }] };
  assert.deepEqual(notKept(sent, { containers: [{ name: 'app', command: ['sh', '-c', 'x'], imagePullPolicy: 'Never' }], dnsPolicy: 'ClusterFirst' }), []);
  assert.deepEqual(notKept(sent, { containers: [{ name: 'app', command: ['sh', '-c', 'y'] }] }), ['.containers[0].command[2]: sent "x", got "y"']);
  assert.match(notKept(sent, { containers: [{ name: 'app', command: ['sh', '-c', 'x'] }, { name: 'leasehold' }] })[0]!, /^\.containers: sent 1 elements/);
  assert.match(notKept(sent, {})[0]!, /^\.containers: sent 1 elements, got undefined/);
  assert.match(notKept({ a: { b: 1 } }, { a: 'x' })[0]!, /^\.a: sent an object/);
});
