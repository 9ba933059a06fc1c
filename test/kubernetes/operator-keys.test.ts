/**
 * `leasehold operator`'s injection-mark keys on a real API server (issue 36): no change to the
 * key's Secret takes a grant from a pod that holds one. The Secret deleted under a running
 * operator is made again with the same key; deleted while no replica runs (a new key), the older
 * pods keep what they hold, said by an Event, and new pods are signed with the new key; a
 * rotation (leasehold.io/rotate) signs new pods with a new key while the older ones keep theirs,
 * and the old key goes once no pod needs it. Pods stay Pending (no kubelet): the grant is read
 * with `kubectl auth can-i` and the Role's and RoleBinding's uids.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor, type Proc } from '../support/cli.js';
import { freshNamespace, kubectl } from '../support/kube.js';
import { kubectlIn, startOperatorProcess, stopOperators, webhookCaBundle, webhookConfiguration } from '../support/operator-process.js';
import { freePort } from '../support/control-plane.js';
import { injectionMark } from '../../src/operator/injection-mark.js';
import { keyId } from '../../src/operator/mark-keyring.js';

const WEBHOOK = `leasehold-operator-keys-${process.pid}`;
const MARK_SECRET = 'leasehold-operator-mark';
const LEASE = 'keys';

const json = <T>(args: string[]) => JSON.parse(kubectl([...args, '-o', 'json'])) as T;

interface PodJson {
  metadata: { name: string; uid: string; annotations?: Record<string, string> };
  spec: { containers: { name: string }[] };
}
interface MarkSecret {
  metadata: { uid: string; annotations?: Record<string, string> };
  data: Record<string, string>;
}
interface EventJson {
  reason: string;
  message: string;
  involvedObject: { uid: string };
}

describe("leasehold operator: a change of the marks' key never takes back a running pod's grant", () => {
  let ops = '';
  let app = '';
  let port = 0;
  let operator: Proc | undefined;
  const started: Proc[] = [];

  const startOperator = () => {
    // --tls-check 1s (the harness's): the Secret reread every second, a retired key's grace 3 s.
    const p = startOperatorProcess({
      namespace: ops,
      identity: `keys-${started.length}`,
      port,
      webhook: WEBHOOK,
      flags: ['--extra-host', '127.0.0.1', '--resync', '2s'],
    });
    started.push(p);
    return p;
  };
  const secret = (): MarkSecret | undefined => {
    try {
      return json<MarkSecret>(['get', 'secret', MARK_SECRET, '-n', ops]);
    } catch {
      return undefined;
    }
  };
  const signingKey = () => Buffer.from(secret()?.data['mark.key'] ?? '', 'base64');
  /** The uids of the operator's Role and RoleBinding for (default, LEASE), found by the annotations every version writes. */
  const uids = () =>
    ['role', 'rolebinding'].flatMap((kind) =>
      json<{ items: { metadata: { uid: string; annotations?: Record<string, string> } }[] }>([
        'get',
        kind,
        '-n',
        app,
        '-l',
        'app.kubernetes.io/managed-by=leasehold-operator',
      ])
        .items.filter((o) => o.metadata.annotations?.['leasehold.io/lease'] === LEASE && o.metadata.annotations['leasehold.io/service-account'] === 'default')
        .map((o) => o.metadata.uid),
    );
  const canUpdate = (lease = LEASE) => {
    try {
      return kubectl(['auth', 'can-i', 'update', `leases/${lease}`, '-n', app, '--as', `system:serviceaccount:${app}:default`]).trim();
    } catch (err) {
      return String((err as { stdout?: Buffer }).stdout ?? '').trim();
    }
  };
  const events = (uid: string) => json<{ items: EventJson[] }>(['get', 'events', '-n', app]).items.filter((e) => e.involvedObject.uid === uid);
  /** A labelled pod of the lease, admitted (and injected) by the operator. */
  const createPod = (name: string, lease = LEASE): PodJson => {
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: app, labels: { 'leasehold.io/inject': 'true' }, annotations: { 'leasehold.io/lease': lease } },
      spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
    };
    const pod = JSON.parse(kubectlIn(['create', '-f', '-', '-o', 'json'], JSON.stringify(manifest))) as PodJson;
    assert.ok(
      pod.spec.containers.some((c) => c.name === 'leasehold'),
      `${name} injected`,
    );
    return pod;
  };
  const markedWith = (pod: PodJson, key: Buffer, lease = LEASE) =>
    pod.metadata.annotations?.['leasehold.io/injected-mark'] === injectionMark(key, { namespace: app, serviceAccount: 'default', lease, podLabel: false });

  before(async () => {
    ops = await freshNamespace('opkeys');
    app = await freshNamespace('opkeysapp');
    kubectl(['create', 'serviceaccount', 'default', '-n', app]);
    port = await freePort();
    kubectlIn(['create', '-f', '-'], JSON.stringify(webhookConfiguration({ name: WEBHOOK, port, failurePolicy: 'Fail', namespaces: [app] })));
    operator = startOperator();
    await waitFor('the caBundle written', () => webhookCaBundle(WEBHOOK) !== '', 30_000, 100);
    kubectlIn(
      ['apply', '-f', '-'],
      JSON.stringify(webhookConfiguration({ name: WEBHOOK, port, failurePolicy: 'Fail', namespaces: [app], caBundle: webhookCaBundle(WEBHOOK) })),
    );
    // The API server reads webhook configurations through its cache: wait until a labelled pod is injected.
    await waitFor(
      'a first injection',
      () => {
        try {
          createPod('first');
          return true;
        } catch {
          return false;
        }
      },
      30_000,
      200,
    );
    await waitFor('the first grant', () => canUpdate() === 'yes', 30_000, 100);
  });

  after(() => {
    stopOperators(started, WEBHOOK);
    for (const ns of [ops, app]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('the Secret deleted under the running operator is made again, with the same key, within a --tls-check', async () => {
    const key = signingKey();
    const before = uids();
    const uid = secret()!.metadata.uid;
    kubectl(['delete', 'secret', MARK_SECRET, '-n', ops]);
    const back = await waitFor('the Secret made again', () => secret(), 15_000, 100);
    assert.notEqual(back.metadata.uid, uid, 'a new Secret');
    assert.deepEqual(signingKey(), key, 'the key the pods were signed with');
    await waitFor(
      'the log line',
      () => operator!.stderr().includes('injection mark Secret was deleted: made it again with the keys this replica holds'),
      10_000,
      100,
    );
    assert.equal(canUpdate(), 'yes');
    assert.deepEqual(uids(), before);
  });

  it(
    'deleted while no replica runs: a new key; the older pods keep their Role and RoleBinding as they were, said by an Event; new pods are signed with the new key',
    { timeout: 90_000 },
    async () => {
      const oldKey = signingKey();
      const before = uids();
      assert.equal(before.length, 2);
      const first = json<PodJson>(['get', 'pod', 'first', '-n', app]);
      assert.ok(markedWith(first, oldKey));
      operator!.kill('SIGTERM');
      await operator!.exited;
      kubectl(['delete', 'secret', MARK_SECRET, '-n', ops]);
      operator = startOperator();
      await waitFor('a new key', () => signingKey().length === 32 && !signingKey().equals(oldKey), 30_000, 100);
      // The Event comes after the pass's removals: once it is there, that pass has kept the grant.
      const kept = await waitFor('the Event on the older pod', () => events(first.metadata.uid).find((e) => e.reason === 'LeaseholdGrantKept'), 30_000, 200);
      assert.match(kept.message, /keeps what this pod's ServiceAccount already holds, as it is and never more.*no longer holds/);
      assert.deepEqual(uids(), before, 'the same Role and RoleBinding');
      assert.equal(canUpdate(), 'yes');
      await waitFor('the log line', () => operator!.stderr().includes('pod grant kept: its injection mark key is lost'), 10_000, 100);
      assert.equal(
        events(first.metadata.uid).find((e) => e.reason === 'LeaseholdNotGranted'),
        undefined,
        'never reported as not granted',
      );

      // A new pod of the pair: signed with the new key; the grant is its own once the old pod goes.
      const second = createPod('second');
      assert.ok(markedWith(second, signingKey()));
      kubectl(['delete', 'pod', 'first', '-n', app, '--grace-period=0', '--force']);
      // A pod of another lease, created after: its grant comes from a pass that saw the first pod gone.
      const third = createPod('third', 'marker');
      assert.ok(markedWith(third, signingKey(), 'marker'));
      await waitFor('a pass after the deletion', () => canUpdate('marker') === 'yes', 15_000, 100);
      assert.equal(canUpdate(), 'yes', "the grant is the second pod's now");
      assert.deepEqual(uids(), before);
    },
  );

  it(
    'leasehold.io/rotate: new pods are signed with a new key, the older keep their grant, and the old key goes once none needs it',
    { timeout: 90_000 },
    async () => {
      const oldKey = signingKey();
      const second = json<PodJson>(['get', 'pod', 'second', '-n', app]);
      const third = json<PodJson>(['get', 'pod', 'third', '-n', app]);
      kubectl(['annotate', 'secret', MARK_SECRET, '-n', ops, 'leasehold.io/rotate=true']);
      await waitFor('the rotation', () => !signingKey().equals(oldKey) && secret()?.metadata.annotations?.['leasehold.io/rotate'] === undefined, 30_000, 100);
      const retired = JSON.parse(Buffer.from(secret()!.data['mark.retired']!, 'base64').toString()) as { key: string }[];
      assert.deepEqual(
        retired.map((r) => keyId(Buffer.from(r.key, 'base64'))),
        [keyId(oldKey)],
        'the old key kept, retired',
      );
      await waitFor('the log line', () => operator!.stderr().includes('injection mark key rotated'), 10_000, 100);
      const fourth = createPod('fourth');
      assert.ok(markedWith(fourth, signingKey()), 'signed with the new key');
      // A pass after the rotation, with the old pods still there: a pod of another lease, granted.
      const fifth = createPod('fifth', 'marker-2');
      await waitFor('a pass after the rotation', () => canUpdate('marker-2') === 'yes', 15_000, 100);
      assert.equal(canUpdate(), 'yes');
      assert.equal(canUpdate('marker'), 'yes', "the older pods' grants are kept");
      for (const p of [second, third]) assert.deepEqual(events(p.metadata.uid), [], `${p.metadata.name} reported`);

      // The old pods go: past its grace (3 × --tls-check), no pod needs the old key.
      for (const p of [second, third]) kubectl(['delete', 'pod', p.metadata.name, '-n', app, '--grace-period=0', '--force']);
      await waitFor(
        'the old key dropped',
        () => {
          const s = secret()!;
          const dropped = JSON.parse(Buffer.from(s.data['mark.dropped'] ?? '', 'base64').toString() || '[]') as string[];
          return dropped.includes(keyId(oldKey)) && Buffer.from(s.data['mark.retired'] ?? '', 'base64').toString() === '[]';
        },
        30_000,
        200,
      );
      assert.equal(canUpdate(), 'yes', "the new key's pod keeps the grant");
      await waitFor("the older pod's grant removed with it", () => canUpdate('marker') === 'no', 15_000, 100);
      for (const p of [fourth, fifth]) assert.deepEqual(events(p.metadata.uid), []);
    },
  );
});
