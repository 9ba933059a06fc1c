/**
 * Two installs of `leasehold operator` on one real API server (issue 36), each in its own
 * namespace with its own webhook configuration and its own value of leasehold.io/inject: each
 * injects and grants only the pods labelled for it, and neither touches the other's Roles and
 * RoleBindings, even for the same ServiceAccount and lease in the same namespace. Each pass of
 * one is made to happen while the other's grants exist (a new pod of it, whose grant comes from
 * that pass), and the other's objects are then checked by uid.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor, type Proc } from '../support/cli.js';
import { freshNamespace, kubectl } from '../support/kube.js';
import { kubectlIn, startOperatorProcess, stopOperators, webhookCaBundle, webhookConfiguration } from '../support/operator-process.js';
import { freePort } from '../support/control-plane.js';
import { INSTALLATION_LABEL, grantName, installationOf } from '../../src/operator/rbac.js';
import { injectionMark } from '../../src/operator/injection-mark.js';

const json = <T>(args: string[]) => JSON.parse(kubectl([...args, '-o', 'json'])) as T;

interface PodJson {
  metadata: { name: string; uid: string; annotations?: Record<string, string> };
  spec: { containers: { name: string }[] };
}
interface Named {
  metadata: { name: string; uid: string; labels?: Record<string, string> };
}

interface Install {
  name: string;
  injectValue: string;
  ops: string;
  port: number;
  webhook: string;
  proc?: Proc;
}

describe('two operator installs in one cluster leave each other alone', () => {
  let app = '';
  const a: Install = { name: 'a', injectValue: 'true', ops: '', port: 0, webhook: `leasehold-operator-a-${process.pid}` };
  const b: Install = { name: 'b', injectValue: 'team-b', ops: '', port: 0, webhook: `leasehold-operator-b-${process.pid}` };
  const procs: Proc[] = [];

  const installation = (i: Install) => installationOf(i.ops, 'leasehold-operator');
  const key = (i: Install) =>
    Buffer.from(json<{ data: Record<string, string> }>(['get', 'secret', 'leasehold-operator-mark', '-n', i.ops]).data['mark.key']!, 'base64');
  const canUpdate = (lease: string) => {
    try {
      return kubectl(['auth', 'can-i', 'update', `leases/${lease}`, '-n', app, '--as', `system:serviceaccount:${app}:default`]).trim();
    } catch (err) {
      return String((err as { stdout?: Buffer }).stdout ?? '').trim();
    }
  };
  /** The install's Roles and RoleBindings, by name, with their uids. */
  const objects = (i: Install) =>
    Object.fromEntries(
      ['roles', 'rolebindings'].flatMap((kind) =>
        json<{ items: Named[] }>(['get', kind, '-n', app, '-l', `${INSTALLATION_LABEL}=${installation(i)}`]).items.map((o) => [
          `${kind}/${o.metadata.name}`,
          o.metadata.uid,
        ]),
      ),
    );
  const createPod = (i: Install, name: string, lease: string): { ok: boolean; pod?: PodJson; out: string } => {
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: app, labels: { 'leasehold.io/inject': i.injectValue }, annotations: { 'leasehold.io/lease': lease } },
      spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
    };
    try {
      const out = kubectlIn(['create', '-f', '-', '-o', 'json'], JSON.stringify(manifest));
      return { ok: true, pod: JSON.parse(out) as PodJson, out };
    } catch (err) {
      return { ok: false, out: String((err as { stderr?: Buffer }).stderr ?? err) };
    }
  };
  /** Created, injected, and signed with the key of install `i`. */
  const injectedBy = (i: Install, name: string, lease: string) => {
    const r = createPod(i, name, lease);
    assert.ok(r.ok, r.out);
    assert.ok(
      r.pod!.spec.containers.some((c) => c.name === 'leasehold'),
      `${name} injected`,
    );
    assert.equal(
      r.pod!.metadata.annotations?.['leasehold.io/injected-mark'],
      injectionMark(key(i), { namespace: app, serviceAccount: 'default', lease, podLabel: false }),
      `${name} signed by install ${i.name}`,
    );
  };

  before(async () => {
    app = await freshNamespace('opinstapp');
    kubectl(['create', 'serviceaccount', 'default', '-n', app]);
    for (const i of [a, b]) {
      i.ops = await freshNamespace(`opinst${i.name}`);
      i.port = await freePort();
      const config = (caBundle?: string) =>
        webhookConfiguration({ name: i.webhook, port: i.port, failurePolicy: 'Fail', namespaces: [app], injectValue: i.injectValue, caBundle });
      kubectlIn(['create', '-f', '-'], JSON.stringify(config()));
      i.proc = startOperatorProcess({
        namespace: i.ops,
        identity: `inst-${i.name}`,
        port: i.port,
        webhook: i.webhook,
        flags: ['--extra-host', '127.0.0.1', '--resync', '2s', '--inject-value', i.injectValue],
      });
      procs.push(i.proc);
      await waitFor(`install ${i.name}'s caBundle`, () => webhookCaBundle(i.webhook) !== '', 30_000, 100);
    }
    // The API server reads webhook configurations through its cache: wait until each injects.
    for (const i of [a, b]) {
      let n = 0;
      await waitFor(
        `install ${i.name} injecting`,
        () => {
          const r = createPod(i, `probe-${i.name}-${n++}`, `probe-${i.name}`);
          return r.ok && r.pod!.spec.containers.some((c) => c.name === 'leasehold');
        },
        30_000,
        200,
      );
    }
  });

  after(() => {
    for (const i of [a, b]) stopOperators([i.proc], i.webhook);
    for (const ns of [app, a.ops, b.ops]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('each admits and signs only the pods labelled for it; the same pair granted by both gets two grants', { timeout: 60_000 }, async () => {
    injectedBy(a, 'a-shared', 'shared');
    injectedBy(b, 'b-shared', 'shared');
    await waitFor(
      'both grants of the pair',
      () => objects(a)[`roles/${grantName(installation(a), 'default', 'shared')}`] && objects(b)[`roles/${grantName(installation(b), 'default', 'shared')}`],
      30_000,
      200,
    );
    assert.equal(canUpdate('shared'), 'yes');
    for (const i of [a, b]) {
      const role = json<Named>(['get', 'role', grantName(installation(i), 'default', 'shared'), '-n', app]);
      assert.equal(role.metadata.labels?.[INSTALLATION_LABEL], installation(i));
    }
  });

  it("a pass of each, with the other's grants there, leaves them as they are", { timeout: 60_000 }, async () => {
    const ofA = objects(a);
    const ofB = objects(b);
    assert.ok(Object.keys(ofA).length >= 4 && Object.keys(ofB).length >= 4, JSON.stringify({ ofA, ofB }));
    // A new pod of each: its grant is made by a pass that began after it, with the other's grants in place.
    injectedBy(a, 'a-next', 'a-next');
    await waitFor("install a's pass", () => canUpdate('a-next') === 'yes', 30_000, 200);
    injectedBy(b, 'b-next', 'b-next');
    await waitFor("install b's pass", () => canUpdate('b-next') === 'yes', 30_000, 200);
    const {
      [`roles/${grantName(installation(a), 'default', 'a-next')}`]: _ra,
      [`rolebindings/${grantName(installation(a), 'default', 'a-next')}`]: _ba,
      ...aNow
    } = objects(a);
    const {
      [`roles/${grantName(installation(b), 'default', 'b-next')}`]: _rb,
      [`rolebindings/${grantName(installation(b), 'default', 'b-next')}`]: _bb,
      ...bNow
    } = objects(b);
    assert.deepEqual(aNow, ofA, "install a's Roles and RoleBindings, by uid");
    assert.deepEqual(bNow, ofB, "install b's Roles and RoleBindings, by uid");
    // Neither reported the other's pods.
    const reported = json<{ items: { reason: string; involvedObject: { name: string } }[] }>(['get', 'events', '-n', app]).items.filter((e) =>
      e.reason.startsWith('Leasehold'),
    );
    assert.deepEqual(reported, []);
  });

  it("one install's pods going take only its grant of a shared pair", { timeout: 60_000 }, async () => {
    kubectl(['delete', 'pod', 'a-shared', '-n', app, '--grace-period=0', '--force']);
    await waitFor(
      "install a's grant of the pair removed",
      () => objects(a)[`roles/${grantName(installation(a), 'default', 'shared')}`] === undefined,
      30_000,
      200,
    );
    assert.ok(objects(b)[`roles/${grantName(installation(b), 'default', 'shared')}`], "install b's kept");
    assert.equal(canUpdate('shared'), 'yes', "b's pod keeps its grant");
  });
});
